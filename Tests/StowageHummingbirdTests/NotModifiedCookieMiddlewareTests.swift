import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Testing

/// Behind the middleware, in each `rules.setCookie` mode: a handler that answers a validation
/// with a 304 setting a cookie gives that cookie to the client whose request was validated, and
/// to no other unless the cache stores cookies (`store`).
@Suite("Hummingbird middleware: a 304's cookie")
struct NotModifiedCookieMiddlewareTests {
    private static let user = HTTPField.Name("X-User")!

    @Test("the 304's Set-Cookie reaches the validated client and no other", arguments: SetCookieHandling.allCases)
    func cookieReachesItsClientOnly(handling: SetCookieHandling) async throws {
        try await withTemporaryDirectory { root in
            var configuration = HTTPCache.Configuration(kind: .shared, name: "stowage")
            configuration.rules.setCookie = handling
            let cache = try HTTPCache(directory: root, configuration: configuration)
            let calls = CallCounter()
            let router = Router()
            router.add(middleware: try ResponseCacheMiddleware(cache: cache))
            router.get("/p") { request, _ in
                calls.increment()
                if request.headers[.ifNoneMatch] == "\"e1\"" {
                    return Response(
                        status: .notModified,
                        headers: [
                            .eTag: "\"e1\"", .cacheControl: "max-age=600",
                            .setCookie: "sid=\(request.headers[Self.user] ?? "nobody")",
                        ]
                    )
                }
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "no-cache", .eTag: "\"e1\""],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "body"))
                )
            }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            let outcome: Result<Void, any Error>
            do {
                try await app.test(.router) { client in
                    _ = try await client.execute(uri: "/p", method: .get, headers: [Self.user: "first"])
                    let alice = try await client.execute(uri: "/p", method: .get, headers: [Self.user: "alice"])
                    #expect(alice.status == .ok && alice.body.text == "body")
                    #expect(alice.headers[values: .setCookie] == ["sid=alice"], "\(handling): \(alice.headers)")
                    let bob = try await client.execute(uri: "/p", method: .get, headers: [Self.user: "bob"])
                    #expect(bob.body.text == "body")
                    switch handling {
                    case .doNotStore:
                        #expect(bob.headers[values: .setCookie] == ["sid=bob"], "\(bob.headers)")
                        #expect(calls.value == 3)
                    case .storeWithoutCookie:
                        #expect(bob.headers[.setCookie] == nil, "alice's cookie is not replayed: \(bob.headers)")
                        #expect(calls.value == 2)
                    case .store:
                        #expect(bob.headers[values: .setCookie] == ["sid=alice"], "replayed, as the operator chose")
                    }
                }
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            try await cache.close()
            try outcome.get()
        }
    }
}
