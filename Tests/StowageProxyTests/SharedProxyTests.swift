import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPTestSupport
import StowageProxy
import StowageRedis
import StowageRedisTestSupport
import StowageSharedTier
import Testing

/// Two proxies, each with its own memory and disk, sharing one redis-server.
@Suite("Proxies sharing a Redis tier", .enabled(if: RedisServerProcess.isAvailable, "needs redis-server and redis-cli"))
struct SharedProxyTests {
    private struct Node {
        let proxy: CachingProxy
        let tier: RedisSharedTier
        let task: Task<Void, any Error>
        let port: Int
    }

    private static func startNode(upstream: String, redis: String, directory: URL) async throws -> Node {
        // The test support's generous timeouts: the whole suite runs in parallel on two cores.
        let tier = try await RedisSharedTier.connect(url: redis, namespace: "stowage-http") {
            $0.connectTimeout = .seconds(30)
            $0.commandTimeout = .seconds(30)
        }
        #expect(await tier.waitUntilSubscribed())
        var configuration = ProxyConfiguration(
            upstream: try .init(parsing: upstream),
            cacheDirectory: directory,
            host: "127.0.0.1",
            port: 0
        )
        configuration.sharedTier = tier
        configuration.logger.logLevel = .critical
        let proxy = try CachingProxy(configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await proxy.run(handlingSignals: false) { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        return Node(proxy: proxy, tier: tier, task: task, port: await iterator.next() ?? 0)
    }

    private static func get(_ client: HTTPClient, _ node: Node, _ path: String, method: HTTPMethod = .GET) async throws
        -> (text: String, cacheStatus: String)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(node.port)\(path)")
        request.method = method
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (String(buffer: body), response.headers["Cache-Status"].first ?? "")
    }

    @Test("a response cached through one proxy is a hit through the other; an unsafe request through one invalidates both")
    func sharedHits() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.stop(); redis.remove() }
        let origin = try await TestOriginServer.start { received in
            .init(fields: [("Cache-Control", "max-age=600")], body: "v\(received.index)")
        }
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-shared-proxy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let first = try await Self.startNode(upstream: origin.baseURL, redis: redis.url, directory: root.appending(path: "a"))
        let second = try await Self.startNode(upstream: origin.baseURL, redis: redis.url, directory: root.appending(path: "b"))
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var failure: (any Error)?
        do {
            let miss = try await Self.get(client, first, "/shared")
            #expect(miss.text == "v1" && miss.cacheStatus.contains("stored"))
            // The record is shared once the first proxy has stored the whole body, which may be
            // just after the client has it: wait for it in Redis.
            let recordKey = "m " + origin.baseURL + "/shared"
            let stored = ContinuousClock.now + .seconds(10)
            while try await first.tier.entry(forKey: recordKey) == nil, ContinuousClock.now < stored {
                try await Task.sleep(for: .milliseconds(5))
            }
            let hit = try await Self.get(client, second, "/shared")
            #expect(hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(origin.requestCount(path: "/shared") == 1)

            // A POST through the second proxy invalidates the URL there and, through Redis, in
            // the first proxy's memory and disk.
            _ = try await Self.get(client, second, "/shared", method: .POST)
            let deadline = ContinuousClock.now + .seconds(10)
            var after = try await Self.get(client, first, "/shared")
            while after.text == "v1", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                after = try await Self.get(client, first, "/shared")
            }
            #expect(after.text != "v1", "the first proxy kept serving the invalidated response")
        } catch {
            failure = error
        }
        try await client.shutdown()
        for node in [first, second] {
            node.task.cancel()
            _ = await node.task.result
            await node.tier.shutdown()
        }
        await origin.stop()
        if let failure { throw failure }
    }

    @Test("with the shared Redis gone, the proxy serves from its own cache and no request fails")
    func redisDown() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.remove() }
        let origin = try await TestOriginServer.start { received in
            .init(fields: [("Cache-Control", "max-age=600")], body: "v\(received.index)")
        }
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-shared-proxy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let node = try await Self.startNode(upstream: origin.baseURL, redis: redis.url, directory: root)
        redis.stop()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var failure: (any Error)?
        do {
            let miss = try await Self.get(client, node, "/local")
            #expect(miss.text == "v1")
            // Stored locally as the body was read; a hit follows once the recording is done.
            var hit = try await Self.get(client, node, "/local")
            let deadline = ContinuousClock.now + .seconds(10)
            while !hit.cacheStatus.hasPrefix("stowage; hit"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                hit = try await Self.get(client, node, "/local")
            }
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(hit.text == "v1" || hit.text == "v2")
        } catch {
            failure = error
        }
        try await client.shutdown()
        node.task.cancel()
        _ = await node.task.result
        await node.tier.shutdown()
        await origin.stop()
        if let failure { throw failure }
    }

    @Test("a proxy restarted after missing an invalidation does not serve the invalidated response from its disk")
    func restartAfterMissedInvalidation() async throws {
        let redis = try await RedisServerProcess.start()
        defer { redis.remove() }
        let origin = try await TestOriginServer.start { received in
            .init(fields: [("Cache-Control", "max-age=600")], body: "v\(received.index)")
        }
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-shared-proxy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var nodes: [Node] = []
        var failure: (any Error)?
        do {
            let first = try await Self.startNode(upstream: origin.baseURL, redis: redis.url, directory: root.appending(path: "a"))
            nodes.append(first)
            #expect(try await Self.get(client, first, "/doc").text == "v1")
            let recordKey = "m " + origin.baseURL + "/doc"
            let stored = ContinuousClock.now + .seconds(10)
            while try await first.tier.entry(forKey: recordKey) == nil, ContinuousClock.now < stored {
                try await Task.sleep(for: .milliseconds(5))
            }
            // The first proxy stops, its response fresh on its disk for ten more minutes; while
            // it is down, a POST through the second proxy invalidates the URL fleet-wide.
            first.task.cancel()
            _ = await first.task.result
            await first.tier.shutdown()
            let second = try await Self.startNode(upstream: origin.baseURL, redis: redis.url, directory: root.appending(path: "b"))
            nodes.append(second)
            _ = try await Self.get(client, second, "/doc", method: .POST)
            #expect(try await second.tier.entry(forKey: recordKey) == nil)

            // Restarted over the same disk, the first proxy must not serve what it never heard
            // was invalidated: its record predates its start and Redis no longer has it.
            let restarted = try await Self.startNode(upstream: origin.baseURL, redis: redis.url, directory: root.appending(path: "a"))
            nodes.append(restarted)
            let after = try await Self.get(client, restarted, "/doc")
            #expect(after.text != "v1", "served the invalidated response from disk (\(after.cacheStatus))")
            #expect(origin.requestCount(path: "/doc") == 3)
        } catch {
            failure = error
        }
        try await client.shutdown()
        for node in nodes {
            node.task.cancel()
            _ = await node.task.result
            await node.tier.shutdown()
        }
        await origin.stop()
        if let failure { throw failure }
    }
}
