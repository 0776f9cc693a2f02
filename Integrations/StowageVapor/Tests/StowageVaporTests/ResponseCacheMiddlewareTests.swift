import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageTesting
import StowageVapor
import Synchronization
import Testing
import Vapor
import VaporTesting

/// Counts a handler's calls, so a test can tell a hit (no call) from a miss.
final class CallCounter: Sendable {
    private let count = Mutex(0)

    /// Counts one call and returns how many there have been.
    @discardableResult
    func increment() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }

    var value: Int { count.withLock { $0 } }
}

/// `Surrogate-Key`, the field the tests tag responses with.
let surrogateKey = HTTPField.Name("Surrogate-Key")!

/// Runs `test` with an application whose middleware caches through a shared cache in a
/// temporary directory (tags from `Surrogate-Key`), keyed on `localhost` (the in-memory
/// tester sends no `Host`), with the routes `routes` adds.
func withCachedApp(
    routes: (Application) throws -> Void,
    _ test: (Application, HTTPCache) async throws -> Void
) async throws {
    let directory = try TemporaryDirectory("StowageVaporTests")
    var configuration = HTTPCache.Configuration(kind: .shared, name: "stowage")
    configuration.tagFields = [surrogateKey]
    let cache = try HTTPCache(directory: directory.url, configuration: configuration)
    var options = ServerResponseCache.Configuration()
    options.authority = "localhost"
    try await withApp { app in
        app.middleware.use(try ResponseCacheMiddleware(cache: cache, configuration: options))
        try routes(app)
        try await test(app, cache)
    }
    try await cache.close()
    withExtendedLifetime(directory) {}
}

extension TestingHTTPResponse {
    /// The body as UTF-8 text.
    var text: String { body.getString(at: body.readerIndex, length: body.readableBytes) ?? "" }
}

/// A response with `text` as its body and `headers`.
func response(_ text: String, headers: HTTPHeaders) -> Response {
    Response(status: .ok, headers: headers, body: .init(string: text))
}

@Suite("Vapor response-cache middleware")
struct ResponseCacheMiddlewareTests {
    @Test("A second GET is a hit: served without calling the handler, with Cache-Status hit")
    func secondGetIsHit() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("page") { _ in response("page \(calls.increment())", headers: ["Cache-Control": "max-age=60"]) }
        } _: { app, _ in
            let first = try await app.testing().sendRequest(.GET, "/page")
            #expect(first.text == "page 1")
            let second = try await app.testing().sendRequest(.GET, "/page")
            #expect(second.text == "page 1")
            #expect(second.headers.first(name: "Cache-Status")?.contains("hit") == true)
            #expect(calls.value == 1)
        }
    }

    @Test("Vary: Accept-Language keeps two variants apart")
    func varyKeepsVariantsApart() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("greeting") { request in
                calls.increment()
                let language = request.headers.first(name: .acceptLanguage) ?? "none"
                return response(
                    "hello in \(language)",
                    headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"]
                )
            }
        } _: { app, _ in
            for _ in 0..<2 {
                for language in ["en", "fr"] {
                    let reply = try await app.testing().sendRequest(
                        .GET,
                        "/greeting",
                        headers: ["Accept-Language": language]
                    )
                    #expect(reply.text == "hello in \(language)")
                }
            }
            #expect(calls.value == 2)
        }
    }

    @Test("Cache-Control: private and Set-Cookie responses are never served to another request")
    func privateAndCookieResponsesAreNotShared() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("account") { _ in
                response("account of user \(calls.increment())", headers: ["Cache-Control": "private, max-age=60"])
            }
            app.get("login") { _ in
                let call = calls.increment()
                return response(
                    "welcome \(call)",
                    headers: ["Cache-Control": "max-age=60", "Set-Cookie": "session=\(call)"]
                )
            }
            app.get("catalog") { _ in
                response("catalog \(calls.increment())", headers: ["Cache-Control": "public, max-age=60"])
            }
        } _: { app, _ in
            _ = try await app.testing().sendRequest(.GET, "/account")
            #expect(try await app.testing().sendRequest(.GET, "/account").text == "account of user 2")
            _ = try await app.testing().sendRequest(.GET, "/login")
            let login = try await app.testing().sendRequest(.GET, "/login")
            #expect(login.headers.first(name: "Set-Cookie") == "session=4")
            #expect(login.text == "welcome 4")
            // The same response without `private` or a cookie is shared.
            _ = try await app.testing().sendRequest(.GET, "/catalog")
            #expect(try await app.testing().sendRequest(.GET, "/catalog").text == "catalog 5")
            #expect(calls.value == 5)
        }
    }

    @Test("A streamed body is stored whole; one that throws mid-way is not stored")
    func streamedBodies() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("stream") { _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: ["Cache-Control": "max-age=60"],
                    // managedAsyncStream: the error reaches the body's reader. (A throwing plain
                    // asyncStream is lost by Vapor's own Response.Body.collect, which then traps
                    // on its unfulfilled promise in debug builds.)
                    body: .init(managedAsyncStream: { writer in
                        try await writer.writeBuffer(ByteBuffer(string: "part one \(call),"))
                        if call == 1 { throw Abort(.internalServerError, reason: "the body failed mid-way") }
                        try await writer.writeBuffer(ByteBuffer(string: "part two"))
                    })
                )
            }
        } _: { app, _ in
            // The first response fails (performTest: sendRequest would record the error as an issue).
            let broken = try? await app.testing().performTest(
                request: TestingHTTPRequest(method: .GET, url: URI(path: "/stream"), headers: [:], body: ByteBuffer())
            )
            #expect(broken?.text != "part one 1,part two")
            #expect(try await app.testing().sendRequest(.GET, "/stream").text == "part one 2,part two")
            let hit = try await app.testing().sendRequest(.GET, "/stream")
            #expect(hit.text == "part one 2,part two")
            #expect(hit.headers.first(name: "Cache-Status")?.contains("hit") == true)
            #expect(calls.value == 2)
        }
    }

    @Test("Invalidation by URL, prefix and tag sends the next request to the handler")
    func invalidationReachesHandler() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("items", ":id") { request in
                let id = request.parameters.get("id") ?? "?"
                return response(
                    "item \(id), call \(calls.increment())",
                    headers: ["Cache-Control": "max-age=600", "Surrogate-Key": "items item-\(id)"]
                )
            }
        } _: { app, cache in
            func fetch(_ id: Int) async throws -> String {
                try await app.testing().sendRequest(.GET, "/items/\(id)").text
            }
            _ = try await fetch(1)
            _ = try await fetch(2)
            #expect(try await fetch(1) == "item 1, call 1")

            #expect(try await cache.invalidate(url: "http://localhost/items/1"))
            #expect(try await fetch(1) == "item 1, call 3")
            #expect(try await fetch(2) == "item 2, call 2")

            #expect(try await cache.invalidate(urlPrefix: "http://localhost/items/") == 2)
            #expect(try await fetch(1) == "item 1, call 4")
            #expect(try await fetch(2) == "item 2, call 5")

            #expect(try await cache.invalidate(tag: "item-2") >= 1)
            #expect(try await fetch(1) == "item 1, call 4")
            #expect(try await fetch(2) == "item 2, call 6")
        }
    }

    @Test("A POST reaches the handler with its body, and invalidates the URL it changed")
    func postPassesThroughAndInvalidates() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("note") { _ in response("note \(calls.increment())", headers: ["Cache-Control": "max-age=600"]) }
            app.post("note") { request in
                calls.increment()
                return request.body.string ?? ""
            }
        } _: { app, _ in
            _ = try await app.testing().sendRequest(.GET, "/note")
            #expect(try await app.testing().sendRequest(.GET, "/note").text == "note 1")
            let posted = try await app.testing().sendRequest(.POST, "/note", body: ByteBuffer(string: "new text"))
            #expect(posted.text == "new text")
            #expect(try await app.testing().sendRequest(.GET, "/note").text == "note 3")
            #expect(calls.value == 3)
        }
    }

    @Test("A conditional GET whose ETag matches the stored response gets a 304 from the cache")
    func conditionalRequestGets304() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("doc") { _ in
                calls.increment()
                return response("document", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""])
            }
        } _: { app, _ in
            _ = try await app.testing().sendRequest(.GET, "/doc")
            let conditional = try await app.testing().sendRequest(.GET, "/doc", headers: ["If-None-Match": "\"v1\""])
            #expect(conditional.status == .notModified)
            #expect(conditional.body.readableBytes == 0)
            #expect(calls.value == 1)
        }
    }

    @Test("A private HTTPCache is refused with invalidConfiguration")
    func privateCacheIsRefused() throws {
        let directory = try TemporaryDirectory("StowageVaporTests-private")
        let cache = try HTTPCache(directory: directory.url, configuration: HTTPCache.Configuration(kind: .private))
        let error = #expect(throws: StowageError.self) {
            _ = try ResponseCacheMiddleware(cache: cache)
        }
        #expect(error?.code == .invalidConfiguration)
        try cache.close()
    }
}
