import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Testing

@Suite("Hummingbird response-cache middleware")
struct ResponseCacheMiddlewareTests {
    @Test("A second GET is a hit: served without calling the handler, with Cache-Status hit")
    func secondGetIsHit() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/page") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60", .contentType: "text/plain"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "page \(call)"))
                )
            }
        } _: { client, _ in
            let first = try await client.execute(uri: "/page", method: .get)
            #expect(first.body.text == "page 1")
            #expect(first.headers[.cacheStatus]?.contains("fwd=uri-miss") == true)
            let second = try await client.execute(uri: "/page", method: .get)
            #expect(second.status == .ok)
            #expect(second.body.text == "page 1")
            #expect(second.headers[.cacheStatus]?.contains("hit") == true)
            #expect(calls.value == 1)
        }
    }

    @Test("Vary: Accept-Language keeps two variants apart")
    func varyKeepsVariantsApart() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/greeting") { request, _ in
                calls.increment()
                let language = request.headers[.acceptLanguage] ?? "none"
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60", .vary: "Accept-Language"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "hello in \(language)"))
                )
            }
        } _: { client, _ in
            for _ in 0..<2 {
                for language in ["en", "fr"] {
                    let response = try await client.execute(
                        uri: "/greeting",
                        method: .get,
                        headers: [.acceptLanguage: language]
                    )
                    #expect(response.body.text == "hello in \(language)")
                }
            }
            #expect(calls.value == 2)
        }
    }

    @Test("Cache-Control: private and Set-Cookie responses are never served to another request")
    func privateAndCookieResponsesAreNotShared() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/account") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "private, max-age=60"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "account of user \(call)"))
                )
            }
            router.get("/catalog") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "public, max-age=60"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "catalog \(call)"))
                )
            }
            router.get("/login") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60", .setCookie: "session=\(call)"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "welcome \(call)"))
                )
            }
        } _: { client, _ in
            _ = try await client.execute(uri: "/account", method: .get)
            let account = try await client.execute(uri: "/account", method: .get)
            #expect(account.body.text == "account of user 2")
            _ = try await client.execute(uri: "/login", method: .get)
            let login = try await client.execute(uri: "/login", method: .get)
            #expect(login.headers[.setCookie] == "session=4")
            #expect(login.body.text == "welcome 4")
            // The same response without `private` or a cookie is shared.
            _ = try await client.execute(uri: "/catalog", method: .get)
            let catalog = try await client.execute(uri: "/catalog", method: .get)
            #expect(catalog.body.text == "catalog 5")
            #expect(calls.value == 5)
        }
    }

    @Test("A body streamed in several chunks is stored whole and served from the cache")
    func streamedBodyIsStoredWhole() async throws {
        let calls = CallCounter()
        try await withLiveCachedApp { router in
            router.get("/stream") { _, _ in
                calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody { writer in
                        for part in ["first,", "second,", "third"] {
                            try await writer.write(ByteBuffer(string: part))
                            await Task.yield()
                        }
                        try await writer.finish(nil)
                    }
                )
            }
        } _: { client, _ in
            let first = try await client.execute(uri: "/stream", method: .get)
            #expect(first.body.text == "first,second,third")
            let second = try await client.execute(uri: "/stream", method: .get)
            #expect(second.body.text == "first,second,third")
            #expect(second.headers[.cacheStatus]?.contains("hit") == true)
            #expect(calls.value == 1)
        }
    }

    @Test("A body that throws mid-way is not stored: the next request reaches the handler")
    func failedStreamIsNotStored() async throws {
        let calls = CallCounter()
        try await withCachedApp(setup: .router) { router in
            router.get("/broken") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(string: "partial \(call),"))
                        if call == 1 { throw TestFailure("the handler's body failed mid-way") }
                        try await writer.write(ByteBuffer(string: "complete"))
                        try await writer.finish(nil)
                    }
                )
            }
        } _: { client, _ in
            // The first response breaks off: the client sees an error or a cut body.
            let first = try? await client.execute(uri: "/broken", method: .get)
            #expect(first?.body.text != "partial 1,complete")
            let second = try await client.execute(uri: "/broken", method: .get)
            #expect(second.body.text == "partial 2,complete")
            // The complete one is stored.
            let third = try await client.execute(uri: "/broken", method: .get)
            #expect(third.body.text == "partial 2,complete")
            #expect(calls.value == 2)
        }
    }

    @Test("Invalidation by URL, prefix and tag sends the next request to the handler")
    func invalidationReachesHandler() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/items/:id") { _, context in
                let call = calls.increment()
                let id = context.parameters.get("id") ?? "?"
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=600", surrogateKey: "items item-\(id)"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "item \(id), call \(call)"))
                )
            }
        } _: { client, cache in
            func fetch(_ id: Int) async throws -> String {
                try await client.execute(uri: "/items/\(id)", method: .get).body.text
            }
            _ = try await fetch(1)
            _ = try await fetch(2)
            #expect(try await fetch(1) == "item 1, call 1")
            #expect(calls.value == 2)

            #expect(try await cache.invalidate(url: "http://localhost/items/1"))
            #expect(try await fetch(1) == "item 1, call 3")
            #expect(try await fetch(2) == "item 2, call 2")

            #expect(try await cache.invalidate(urlPrefix: "http://localhost/items/") == 2)
            #expect(try await fetch(1) == "item 1, call 4")
            #expect(try await fetch(2) == "item 2, call 5")

            #expect(try await cache.invalidate(tag: "item-2") >= 1)
            #expect(try await fetch(1) == "item 1, call 4")
            #expect(try await fetch(2) == "item 2, call 6")
            // Tags are the operator's: the client never sees them.
            #expect(try await client.execute(uri: "/items/2", method: .get).headers[surrogateKey] == nil)
        }
    }

    @Test("A POST reaches the handler with its body, and invalidates the URL it changed")
    func postPassesThroughAndInvalidates() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/note") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=600"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "note \(call)"))
                )
            }
            router.post("/note") { request, _ in
                calls.increment()
                let sent = try await request.body.collect(upTo: 1 << 20)
                return Response(status: .ok, body: ResponseBody(byteBuffer: sent))
            }
        } _: { client, _ in
            _ = try await client.execute(uri: "/note", method: .get)
            #expect(try await client.execute(uri: "/note", method: .get).body.text == "note 1")
            let posted = try await client.execute(uri: "/note", method: .post, body: ByteBuffer(string: "new text"))
            #expect(posted.body.text == "new text")
            let after = try await client.execute(uri: "/note", method: .get)
            #expect(after.body.text == "note 3")
            #expect(calls.value == 3)
        }
    }

    @Test("A conditional GET whose ETag matches the stored response gets a 304 from the cache")
    func conditionalRequestGets304() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/doc") { _, _ in
                calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60", .eTag: "\"v1\""],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "document"))
                )
            }
        } _: { client, _ in
            _ = try await client.execute(uri: "/doc", method: .get)
            let conditional = try await client.execute(
                uri: "/doc",
                method: .get,
                headers: [.ifNoneMatch: "\"v1\""]
            )
            #expect(conditional.status == .notModified)
            #expect(conditional.body.readableBytes == 0)
            #expect(conditional.headers[.eTag] == "\"v1\"")
            let other = try await client.execute(uri: "/doc", method: .get, headers: [.ifNoneMatch: "\"v0\""])
            #expect(other.status == .ok)
            #expect(other.body.text == "document")
            #expect(calls.value == 1)
        }
    }

    @Test("A private HTTPCache is refused with invalidConfiguration")
    func privateCacheIsRefused() throws {
        try withTemporaryDirectory { root in
            let cache = try HTTPCache(directory: root, configuration: HTTPCache.Configuration(kind: .private))
            let error = #expect(throws: StowageError.self) {
                _ = try ResponseCacheMiddleware<BasicRequestContext>(cache: cache)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("shared") == true)
            try cache.close()
        }
    }
}
