import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Testing

@Suite("Hummingbird response-cache responder")
struct ResponseCacheResponderTests {
    /// A responder over a `/news` route (fresh 10 s, then stale for 600 s while it refreshes)
    /// behind `cache`; `calls` counts the handler's calls.
    private func withStaleWhileRevalidateApp(
        cache: HTTPCache,
        calls: CallCounter,
        _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let router = Router()
        router.get("/news") { _, _ in
            let call = calls.increment()
            return Response(
                status: .ok,
                headers: [.cacheControl: "max-age=10, stale-while-revalidate=600"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "news \(call)"))
            )
        }
        let responder = try ResponseCacheResponder(cache: cache, responder: router.buildResponder())
        let app = Application(responder: responder, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.router, body)
    }

    @Test("stale-while-revalidate: the stale response is served and the handler refreshes it in the background")
    func refreshesInBackground() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock()
            var configuration = HTTPCache.Configuration(kind: .shared)
            configuration.clock = clock.cacheClock
            let cache = try HTTPCache(directory: root, configuration: configuration)
            let calls = CallCounter()
            try await withStaleWhileRevalidateApp(cache: cache, calls: calls) { client in
                #expect(try await client.execute(uri: "/news", method: .get).body.text == "news 1")
                clock.advance(by: .seconds(20))
                let stale = try await client.execute(uri: "/news", method: .get)
                #expect(stale.body.text == "news 1")
                #expect(stale.headers[.cacheStatus]?.contains("hit; ttl=-") == true)
                // No further request: the refresh runs on its own.
                try await eventually { calls.value == 2 }
                try await eventually {
                    try await client.execute(uri: "/news", method: .get).body.text == "news 2"
                }
            }
            try await cache.close()
        }
    }
}
