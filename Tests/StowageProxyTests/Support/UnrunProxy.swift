import AsyncHTTPClient
import Logging
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageTestSupport

@testable import StowageProxy

/// A proxy that is never run, in a temporary directory, for tests that drive its parts (its
/// cache, its hit path, its working-memory charge) as the server would; its upstream client is
/// closed at the end.
enum UnrunProxy {
    /// Calls `body` with a proxy whose memory level holds `memoryCapacity` bytes; a memory-only
    /// cache when not `onDisk`.
    static func with(
        memoryCapacity: Int64,
        onDisk: Bool = true,
        _ body: (CachingProxy) async throws -> Void
    ) async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = ProxyConfiguration(
            upstream: try .init(parsing: "http://127.0.0.1:9"),
            cacheDirectory: scratch.url,
            host: "127.0.0.1",
            port: 0
        )
        configuration.cache.memoryCapacity = ByteCount(memoryCapacity)
        if !onDisk { configuration.cache.diskCapacity = ByteCount(0) }
        configuration.logger = Logger(label: "test.proxy", factory: SwiftLogNoOpLogHandler.init)
        configuration.cache.logger = Logger(label: "test.cache", factory: SwiftLogNoOpLogHandler.init)
        let proxy = try CachingProxy(configuration: configuration)
        var failure: (any Error)?
        do { try await body(proxy) } catch { failure = error }
        try await proxy.transport.client.shutdown()
        if let failure { throw failure }
    }
}
