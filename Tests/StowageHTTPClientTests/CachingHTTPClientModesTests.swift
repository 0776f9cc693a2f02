import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageHTTPTestSupport
import Testing

/// Which cache a client uses, as a `URLSession` uses its configuration's `urlCache`; against a
/// real origin on 127.0.0.1.
@Suite struct CachingHTTPClientModesTests {
    func withOrigin(_ body: (TestOriginServer) async throws -> Void) async throws {
        // Fresh for an hour of the real clock (the caches here keep the real clock): beside the
        // whole suite on two loaded cores, two requests have come a minute apart.
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=3600")], body: "v\(r.index)")
        }
        do {
            try await body(origin)
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    func get(_ origin: TestOriginServer) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: "/r")
    }

    /// Sends two requests for one fresh-for-an-hour URL; returns their outcomes and bodies.
    func twice(_ client: CachingHTTPClient, _ origin: TestOriginServer) async throws -> [String] {
        var seen: [String] = []
        for _ in 0..<2 {
            let served = try await client.execute(get(origin))
            let body = String(decoding: try await served.body.collect(upTo: 1 << 20), as: UTF8.self)
            seen.append("\(served.outcome) \(body)")
        }
        try await client.shutdown()
        return seen
    }

    @Test("URLSessionConfiguration.urlCache = nil: a client without a cache sends every request to the origin")
    func noCache() async throws {
        try await withOrigin { origin in
            let client = CachingHTTPClient(cache: nil)
            #expect(client.cache == nil)
            let seen = try await twice(client, origin)
            #expect(seen == ["miss v1", "miss v2"])
            #expect(origin.requestCount == 2)
        }
    }

    @Test("URLCache(memoryCapacity: 0, diskCapacity: 0) as a session's cache: every request reaches the origin")
    func disabledCache() async throws {
        try await withOrigin { origin in
            var configuration = HTTPCache.Configuration(kind: .private)
            configuration.memoryCapacity = ByteCount(0)
            configuration.diskCapacity = ByteCount(0)
            let client = CachingHTTPClient(cache: try HTTPCache(directory: nil, configuration: configuration))
            #expect(client.cache?.mode == .disabled)
            #expect(try await twice(client, origin) == ["miss v1", "miss v2"])
            #expect(origin.requestCount == 2)
        }
    }

    @Test("URLSession's default urlCache is URLCache.shared: a client given no cache uses HTTPCache.shared")
    func sharedByDefault() async throws {
        try await withOrigin { origin in
            // Other suites may replace the shared cache meanwhile: the client has one of the two.
            let before = HTTPCache.shared
            let client = CachingHTTPClient()
            let after = HTTPCache.shared
            #expect(client.cache === before || client.cache === after)
            let seen = try await twice(client, origin)
            // SharedHTTPCacheTests may have set a disabled cache as the shared one for a moment
            // (its `replaceable` test): a client created then keeps it, and everything misses.
            if client.cache?.mode == .disabled {
                #expect(seen == ["miss v1", "miss v2"])
            } else {
                #expect(seen == ["miss v1", "hit v1"])
                #expect(origin.requestCount == 1)
            }
        }
    }
}
