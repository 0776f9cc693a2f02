import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageRedis
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Synchronization
import Testing

/// Two proxies, each with its own memory and disk, sharing one redis-server.
@Suite("Proxies sharing a Redis tier", .enabled(if: RedisServerProcess.isAvailable, "needs redis-server and redis-cli"))
struct SharedProxyTests {
    @Test(
        "a response cached through one proxy is a hit through the other; an unsafe request through one invalidates both"
    )
    func sharedHits() async throws {
        try await SharedProxyFleet.run { fleet in
            let first = try await fleet.startProxy(directory: "a")
            let second = try await fleet.startProxy(directory: "b")
            let miss = try await fleet.get(first, "/shared")
            #expect(miss.text == "v1" && miss.cacheStatus.contains("stored"))
            try await fleet.waitUntilShared(first, "/shared")
            let hit = try await fleet.get(second, "/shared")
            #expect(hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(fleet.origin.requestCount(path: "/shared") == 1)

            // A POST through the second proxy invalidates the URL there and, through Redis, in
            // the first proxy's memory and disk.
            _ = try await fleet.get(second, "/shared", method: .POST)
            // The first proxy stops serving the invalidated response.
            try await eventually { try await fleet.get(first, "/shared").text != "v1" }
        }
    }

    @Test(
        "a ban by tag through one proxy reaches the other: responses it stored, and copies taken from Redis, go everywhere"
    )
    func tagBanReachesEveryProxy() async throws {
        let tagged: TestOriginServer.Script = { received in
            let path = received.head.path ?? "/"
            return .init(
                fields: [
                    ("Cache-Control", "max-age=600"), ("Surrogate-Key", path.hasPrefix("/news/") ? "news" : "other"),
                ],
                body: "\(path)-v\(received.index)"
            )
        }
        try await SharedProxyFleet.run(script: tagged) { fleet in
            let first = try await fleet.startProxy(directory: "a")
            let second = try await fleet.startProxy(directory: "b")
            // Each proxy stores one tagged response from the origin and takes the other's from Redis.
            _ = try await fleet.get(first, "/news/1")
            _ = try await fleet.get(second, "/news/2")
            _ = try await fleet.get(first, "/about")
            for path in ["/news/1", "/news/2", "/about"] {
                try await fleet.waitUntilShared(path.hasSuffix("2") ? second : first, path)
            }
            for proxy in [first, second] {
                for path in ["/news/1", "/news/2", "/about"] {
                    #expect(try await fleet.get(proxy, path).cacheStatus.hasPrefix("stowage; hit"), "\(path)")
                }
            }
            #expect(fleet.origin.requestCount == 3)

            // Only the first proxy knows /news/1 is tagged, only the second /news/2.
            #expect(try await first.proxy.cache.invalidate(tag: "news") == 1)
            #expect(
                try await first.tier.entry(forKey: fleet.recordKey("/news/1")) == nil,
                "the banning proxy removed the shared copy"
            )
            // Whichever proxy asks first fetches a new version, and the other may take that one
            // from Redis; neither may serve the banned one again.
            for proxy in [second, first] {
                for (path, banned) in [("/news/1", "/news/1-v1"), ("/news/2", "/news/2-v2")] {
                    var reply = try await fleet.get(proxy, path)
                    try await eventually {
                        reply = try await fleet.get(proxy, path)
                        return reply.text != banned
                    }
                    #expect(
                        reply.text != banned,
                        "the \(proxy.port == first.port ? "first" : "second") proxy served the banned \(path)"
                    )
                }
                #expect(try await fleet.get(proxy, "/about").cacheStatus.hasPrefix("stowage; hit"), "untagged stays")
            }
        }
    }

    @Test(
        "a body and user info a will-cache hook stores through one proxy reach the other through Redis; clients see the stored length and no user info, and a damaged shared record is a miss"
    )
    func willCacheThroughRedis() async throws {
        try await SharedProxyFleet.run { fleet in
            let first = try await fleet.startProxy(directory: "a") {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.body = Array("from the hook".utf8)
                    proposal.userInfo = ["secret": "do-not-leak"]
                    // A length of its own that describes neither body.
                    proposal.response.headerFields[.contentLength] = "3"
                    return proposal
                }
            }
            let second = try await fleet.startProxy(directory: "b")
            let miss = try await fleet.get(first, "/hooked")
            #expect(miss.text == "v1")
            try await fleet.waitUntilShared(first, "/hooked")
            let record = try #require(try await first.tier.entry(forKey: fleet.recordKey("/hooked")))
            #expect(record.data.first == 2, "format version 2 in the shared level")
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(second.port)/hooked")
            request.method = .GET
            let response = try await fleet.client.execute(request, timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(body == "from the hook")
            #expect(response.headers["Content-Length"] == ["13"])
            #expect(response.headers["Cache-Status"].first?.hasPrefix("stowage; hit") == true)
            #expect(!response.headers.contains { $0.value.contains("do-not-leak") || $0.name.contains("secret") })

            // Cut short in its user info: the other proxies read it as a miss and fetch again.
            let damaged = Data(record.data.dropLast(4))
            try await first.tier.setData(damaged, forKey: fleet.recordKey("/other"), timeToLive: nil)
            let third = try await fleet.startProxy(directory: "c")
            let fetched = try await fleet.get(third, "/other")
            #expect(fetched.text.hasPrefix("v"))
            #expect(!fetched.cacheStatus.contains("hit"), "\(fetched.cacheStatus)")
        }
    }

    @Test("with the shared Redis gone, the proxy serves from its own cache and no request fails")
    func redisDown() async throws {
        try await SharedProxyFleet.run { fleet in
            let node = try await fleet.startProxy(directory: "a")
            fleet.redis.stop()
            let miss = try await fleet.get(node, "/local")
            #expect(miss.text == "v1")
            // Stored locally as the body was read; a hit follows once the recording is done.
            var hit = try await fleet.get(node, "/local")
            try await eventually {
                hit = try await fleet.get(node, "/local")
                return hit.cacheStatus.hasPrefix("stowage; hit")
            }
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(hit.text == "v1" || hit.text == "v2")
        }
    }

    @Test("a proxy restarted after missing an invalidation does not serve the invalidated response from its disk")
    func restartAfterMissedInvalidation() async throws {
        try await SharedProxyFleet.run { fleet in
            let first = try await fleet.startProxy(directory: "a")
            #expect(try await fleet.get(first, "/doc").text == "v1")
            try await fleet.waitUntilShared(first, "/doc")
            // The first proxy stops, its response fresh on its disk for ten more minutes; while
            // it is down, a POST through the second proxy invalidates the URL fleet-wide.
            await fleet.stop(first)
            let second = try await fleet.startProxy(directory: "b")
            _ = try await fleet.get(second, "/doc", method: .POST)
            #expect(try await second.tier.entry(forKey: fleet.recordKey("/doc")) == nil)

            // Restarted over the same disk, the first proxy must not serve what it never heard
            // was invalidated: its record predates its start and Redis no longer has it.
            let restarted = try await fleet.startProxy(directory: "a")
            let after = try await fleet.get(restarted, "/doc")
            #expect(after.text != "v1", "served the invalidated response from disk (\(after.cacheStatus))")
            #expect(fleet.origin.requestCount(path: "/doc") == 3)
        }
    }
}

/// A redis-server, an origin whose responses ("v1", "v2", …) are fresh for ten minutes, a
/// scratch directory and an HTTP client, for proxies that share the Redis as their tier.
private final class SharedProxyFleet: Sendable {
    struct Proxy: Sendable {
        let proxy: CachingProxy
        let tier: RedisSharedTier
        let task: Task<Void, any Error>
        let port: Int
    }

    let redis: RedisServerProcess
    let origin: TestOriginServer
    let scratch: TemporaryDirectory
    /// Where the fleet's proxies keep their caches, removed with the fleet.
    var root: URL { scratch.url }
    let client = HTTPClient(eventLoopGroupProvider: .singleton)
    private let proxies = Mutex<[Proxy]>([])

    private init(redis: RedisServerProcess, origin: TestOriginServer) throws {
        self.redis = redis
        self.origin = origin
        scratch = try TemporaryDirectory("shared-proxy")
    }

    /// Runs `body` with a new fleet, then stops every proxy it started, the client, the origin
    /// and Redis; the scratch directory goes with the fleet, whether `body` threw or not.
    static func run(
        script: @escaping TestOriginServer.Script = { received in
            .init(fields: [("Cache-Control", "max-age=600")], body: "v\(received.index)")
        },
        _ body: (SharedProxyFleet) async throws -> Void
    ) async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.remove() }
        let origin = try await TestOriginServer.start(script)
        let fleet = try SharedProxyFleet(redis: redis, origin: origin)
        var failure: (any Error)?
        do {
            try await body(fleet)
        } catch {
            failure = error
        }
        for proxy in fleet.proxies.withLock({ $0 }) { await fleet.stop(proxy) }
        try await fleet.client.shutdown()
        await origin.stop()
        if let failure { throw failure }
    }

    /// Starts `stowage proxy --shared` on a free port with its cache in `root/directory`.
    func startProxy(
        directory: String,
        configure: (inout HTTPCache.Configuration) -> Void = { _ in }
    ) async throws -> Proxy {
        // The test support's generous timeouts: the whole suite runs in parallel on two cores.
        var options = RedisSharedTier.Options()
        options.requestBudget = .seconds(30)
        let tier = try await RedisSharedTier.connect(url: redis.url, namespace: "stowage-http", options: options) {
            $0.connectTimeout = .seconds(30)
            $0.commandTimeout = .seconds(30)
        }
        #expect(await tier.waitUntilSubscribed(timeout: .seconds(300)))
        var configuration = ProxyConfiguration(
            upstream: try .init(parsing: origin.baseURL),
            cacheDirectory: root.appending(path: directory),
            host: "127.0.0.1",
            port: 0
        )
        configuration.cache.sharedTier = tier
        configure(&configuration.cache)
        configuration.logger.logLevel = .critical
        let proxy = try CachingProxy(configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await proxy.run(handlingSignals: false) { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        let started = Proxy(proxy: proxy, tier: tier, task: task, port: await iterator.next() ?? 0)
        proxies.withLock { $0.append(started) }
        return started
    }

    /// Stops `proxy` and its tier (again is harmless).
    func stop(_ proxy: Proxy) async {
        proxy.task.cancel()
        _ = await proxy.task.result
        await proxy.tier.shutdown()
    }

    func get(
        _ proxy: Proxy,
        _ path: String,
        method: HTTPMethod = .GET
    ) async throws
        -> (text: String, cacheStatus: String)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(proxy.port)\(path)")
        request.method = method
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (String(buffer: body), response.headers["Cache-Status"].first ?? "")
    }

    /// The HTTP cache's record key of `path` at the origin.
    func recordKey(_ path: String) -> String { "m " + origin.baseURL + path }

    /// Waits until `proxy` has shared its record of `path`: it does so once it has stored the
    /// whole body, which may be just after the client has it.
    func waitUntilShared(_ proxy: Proxy, _ path: String) async throws {
        try await eventually { try await proxy.tier.entry(forKey: recordKey(path)) != nil }
    }
}
