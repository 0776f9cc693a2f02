import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport

/// A proxy in this process in front of a scripted origin, both on free loopback ports, and an
/// AsyncHTTPClient to talk to the proxy; all stopped at the end.
struct ProxyHarness {
    let origin: TestOriginServer
    let proxyPort: Int
    let client: HTTPClient
    /// The admin listener's port, when the configuration has one.
    var adminPort: Int? = nil
    /// The proxy's cache.
    var cache: HTTPCache? = nil
    /// The proxy itself.
    var proxy: CachingProxy? = nil

    var base: String { "http://127.0.0.1:\(proxyPort)" }

    static func run(
        // Generous: a CI run of the whole suite on two cores once took a request through the
        // proxy past 10 s, and the upstream timeout then cut the client's connection mid-way
        // (remoteConnectionClosed). Tests of the timeout pass their own.
        upstreamTimeout: Duration = .seconds(120),
        originDown: Bool = false,
        sendsTrace: Bool = false,
        upstream: String? = nil,
        configure: (inout ProxyConfiguration) -> Void = { _ in },
        script: @escaping TestOriginServer.Script,
        _ body: (ProxyHarness) async throws -> Void
    ) async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let root = scratch.url
        let origin = try await TestOriginServer.start(script)
        var configuration = ProxyConfiguration(
            upstream: try .init(parsing: upstream ?? origin.baseURL),
            cacheDirectory: root,
            host: "127.0.0.1",
            port: 0
        )
        configuration.upstreamTimeout = upstreamTimeout
        configuration.sendsTrace = sendsTrace
        configuration.cache.memoryCapacity = ByteCount(32_000_000)
        configuration.cache.diskCapacity = ByteCount(400_000_000)
        if ProcessInfo.processInfo.environment["STOWAGE_PROXY_DEBUG"] != nil {
            // Every proxy's log on standard error, whatever logging system another test set up:
            // for a failure that shows only under the whole suite's load.
            // Labelled by its origin's port, so interleaved lines of parallel tests can be told apart.
            configuration.logger = Logger(
                label: "proxy-\(origin.port)",
                factory: { StreamLogHandler.standardError(label: $0) }
            )
            configuration.logger.logLevel = .trace
            configuration.cache.logger = configuration.logger
        } else {
            configuration.logger.logLevel = .critical
        }
        // The connection deadlines (60 s for a head, 75 s idle) are nginx's; a suite running on
        // two starved cores beside builds once stretched a test past them, and the proxy then
        // closed a connection a request was about to use. Tests of the deadlines set their own.
        configuration.requestHeadTimeout = .seconds(600)
        configuration.keepAliveTimeout = .seconds(600)
        configuration.sendTimeout = .seconds(600)
        // nginx's proxy_cache_lock_timeout is 5 s, the default; a full suite on two loaded cores
        // once kept a collapsed fetch's leader longer, and 8 of 30 waiting requests then
        // fetched on their own. No test here is about that timeout.
        configuration.cache.collapseTimeout = .seconds(120)
        configure(&configuration)
        let proxy = try CachingProxy(configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let (adminPorts, adminContinuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            try await proxy.run(
                handlingSignals: false,
                onListening: { port in continuation.yield(port) },
                onAdminListening: { port in adminContinuation.yield(port) }
            )
        }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        var adminPort: Int?
        if configuration.admin != nil {
            var adminIterator = adminPorts.makeAsyncIterator()
            adminPort = await adminIterator.next()
        }
        if originDown { await origin.stop() }
        // Generous: the suites run in parallel on small machines, where 30 connections opened at
        // once may wait seconds for a thread; no test here is about the client's connect time.
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.timeout.connect = Self.clientDeadline
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let harness = ProxyHarness(
            origin: origin,
            proxyPort: port,
            client: client,
            adminPort: adminPort,
            cache: proxy.cache,
            proxy: proxy
        )
        var failure: (any Error)?
        do { try await body(harness) } catch { failure = error }
        try await client.shutdown()
        task.cancel()
        _ = await task.result
        await origin.stop()
        if let failure { throw failure }
    }

    /// How long the test client waits to connect and for a whole reply: a hang catcher only, as
    /// the suites' time limits are. 200 requests at once wait for the client's pooled connections,
    /// and beside the whole suite and a CPU hog a minute was not enough (ShortBodyAttackTests,
    /// `getConnectionFromPoolTimeout`); tests of the proxy's own timeouts drive the proxy's.
    static let clientDeadline = TimeAmount.minutes(5)

    struct Reply {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var cacheStatus: String { headers["Cache-Status"].first ?? "" }
    }

    /// Sends `method path` to the admin listener.
    func admin(_ method: HTTPMethod, _ path: String, token: String? = nil) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(adminPort ?? 0)" + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer " + token) }
        let response = try await client.execute(request, timeout: Self.clientDeadline)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Array(bytes.readableBytesView))
    }

    func get(
        _ path: String,
        method: HTTPMethod = .GET,
        headers: [(String, String)] = [],
        body: [UInt8]? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: Self.clientDeadline)
        let bytes = try await response.body.collect(upTo: 1 << 27)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Array(bytes.readableBytesView))
    }
}

/// An origin script: every response `max-age=SECONDS`, bodies `PREFIX1`, `PREFIX2`, … by request.
func versioned(maxAge: Int, prefix: String = "v") -> TestOriginServer.Script {
    { received in .init(fields: [("Cache-Control", "max-age=\(maxAge)")], body: "\(prefix)\(received.index)") }
}
