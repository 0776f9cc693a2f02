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

@Suite("Hummingbird response-cache middleware: hostile requests and failing handlers")
struct ResponseCacheHostileRequestTests {
    @Test("A GET with a body reaches the handler with that body, and two bodies never share an answer")
    func getWithBodyReachesHandler() async throws {
        let calls = CallCounter()
        try await withLiveCachedApp { router in
            router.get("/search") { request, _ in
                calls.increment()
                let query = String(buffer: try await request.body.collect(upTo: 1 << 16))
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "results for \(query)"))
                )
            }
        } _: { client, _ in
            let first = try await client.execute(uri: "/search", method: .get, body: ByteBuffer(string: "cats"))
            #expect(first.body.text == "results for cats")
            let second = try await client.execute(uri: "/search", method: .get, body: ByteBuffer(string: "dogs"))
            #expect(second.body.text == "results for dogs")
            #expect(calls.value == 2)
        }
    }

    @Test("A handler's HTTPError keeps its status, and nothing is stored for it")
    func handlerErrorKeepsStatus() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/missing") { _, _ -> Response in
                calls.increment()
                throw HTTPError(.notFound, message: "no such thing")
            }
        } _: { client, _ in
            let first = try await client.execute(uri: "/missing", method: .get)
            #expect(first.status == .notFound)
            let second = try await client.execute(uri: "/missing", method: .get)
            #expect(second.status == .notFound)
            #expect(calls.value == 2)
        }
    }

    @Test("A HEAD before any GET stores no empty body that a later GET is served")
    func headThenGetServesBody() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.on("/doc", method: .head) { _, _ in
                calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60", .contentLength: "8"],
                    body: ResponseBody()
                )
            }
            router.get("/doc") { _, _ in
                calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "document"))
                )
            }
        } _: { client, _ in
            let head = try await client.execute(uri: "/doc", method: .head)
            #expect(head.status == .ok)
            #expect(head.body.readableBytes == 0)
            let get = try await client.execute(uri: "/doc", method: .get)
            #expect(get.body.text == "document")
            let again = try await client.execute(uri: "/doc", method: .get)
            #expect(again.body.text == "document")
        }
    }

    @Test("Concurrent requests for one URL whose handler fails all get the error, and a later one succeeds")
    func collapsedFailureReachesEveryone() async throws {
        let calls = CallCounter()
        // The failing calls are held until every request has either reached the handler or
        // waits behind the one that did (the followers' timeout sleeps on a clock that never
        // moves, so none gives up on its own).
        let waitClock = SteppedClock()
        let held = Gate()
        try await withLiveCachedApp(waitClock: waitClock) { router in
            router.get("/flaky") { _, _ -> Response in
                let call = calls.increment()
                if call <= 4 {
                    await held.wait()
                    throw HTTPError(.serviceUnavailable)
                }
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "recovered"))
                )
            }
        } _: { client, cache in
            // A connection each: the test client pipelines its requests on one connection,
            // which the server answers one at a time.
            let port = client.port
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                defer { held.open() }  // a failed wait must not leave the handler held
                for _ in 0..<4 {
                    group.addTask {
                        let connection = LiveClient.connection(toPort: port)
                        connection.connect()
                        let request = TestClient.Request("/flaky", method: .get, authority: "localhost")
                        let status: HTTPResponse.Status
                        do {
                            status = try await connection.execute(request).head.status
                        } catch {
                            try? await connection.shutdown()
                            throw error
                        }
                        try await connection.shutdown()
                        return status
                    }
                }
                try await eventually { calls.value + cache.collapsedRequestCount == 4 }
                held.open()
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.count == 4)
            #expect(statuses.allSatisfy { $0 == .serviceUnavailable })
            let later = try await client.execute(uri: "/flaky", method: .get)
            #expect(later.status == .ok)
            #expect(later.body.text == "recovered")
        }
    }

    @Test("A handler's Content-Length longer than its body is not stored and replayed to later clients")
    func wrongContentLengthIsNotReplayed() async throws {
        let calls = CallCounter()
        try await withCachedApp(setup: .router) { router in
            router.get("/short") { _, _ in
                calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60", .contentLength: "100"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "five!"))
                )
            }
        } _: { client, _ in
            _ = try? await client.execute(uri: "/short", method: .get)
            let second = try await client.execute(uri: "/short", method: .get)
            if second.headers[.cacheStatus]?.contains("hit") == true {
                #expect(second.headers[.contentLength] == String(second.body.readableBytes))
            }
        }
    }

    @Test("A request with a second Host field is answered uncached: what the handler reads of it is not stored")
    func secondHostIsNotCached() async throws {
        let calls = CallCounter()
        let host = HTTPField.Name("Host")!
        try await withLiveCachedApp { router in
            router.get("/links") { request, _ in
                calls.increment()
                // A handler that builds absolute links from the Host it reads.
                let named = request.headers[host] ?? request.head.authority ?? "?"
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "http://\(named)/home"))
                )
            }
        } _: { client, _ in
            _ = try await client.execute(uri: "/links", method: .get, headers: [host: "evil.example"])
            let next = try await client.execute(uri: "/links", method: .get)
            #expect(next.body.text == "http://localhost/home")
            #expect(calls.value == 2)
        }
    }

    @Test("Configuration.scheme keys requests as https behind a TLS terminator, so https invalidation reaches them")
    func configuredSchemeIsKeyed() async throws {
        let calls = CallCounter()
        var configuration = ServerResponseCache.Configuration()
        configuration.scheme = "https"
        try await withCachedApp(configuration: configuration) { router in
            router.get("/page") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=600"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "page \(call)"))
                )
            }
        } _: { client, cache in
            _ = try await client.execute(uri: "/page", method: .get)
            _ = try await cache.invalidate(url: "https://localhost/page")
            let next = try await client.execute(uri: "/page", method: .get)
            #expect(next.body.text == "page 2")
        }
    }

    @Test(
        "A path the router reads as another (empty or dot segments, encoded characters) survives no invalidation",
        arguments: ["//page", "/x//page", "/./page", "/x/../page", "/%70age", "/pag%65"]
    )
    func unnormalizedPathIsNotStored(path: String) async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/page") { _, _ in
                let call = calls.increment()
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=600"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "page \(call)"))
                )
            }
        } _: { client, cache in
            let first = try await client.execute(uri: path, method: .get)
            guard first.status == .ok else { return }  // the router does not route it: nothing to hide
            // Taken down: invalidating the page's URL must reach every spelling of it.
            _ = try await cache.invalidate(url: "http://localhost/page")
            let second = try await client.execute(uri: path, method: .get)
            #expect(second.body.text != first.body.text)
        }
    }

    @Test("A response to a request with a Cookie is not shared unless it says so (public, s-maxage, Vary: Cookie)")
    func cookieRequestAnswerIsNotShared() async throws {
        let calls = CallCounter()
        try await withCachedApp { router in
            router.get("/me") { request, _ in
                calls.increment()
                // Personalised by the session cookie, with freshness meant for the browser.
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=60"],
                    body: ResponseBody(
                        byteBuffer: ByteBuffer(string: "hello \(request.headers[.cookie] ?? "nobody")")
                    )
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
        } _: { client, _ in
            let alice = try await client.execute(uri: "/me", method: .get, headers: [.cookie: "session=alice"])
            #expect(alice.body.text == "hello session=alice")
            let anonymous = try await client.execute(uri: "/me", method: .get)
            #expect(anonymous.body.text == "hello nobody")
            #expect(calls.value == 2)
            // An explicitly public answer is shared, cookie or not.
            _ = try await client.execute(uri: "/catalog", method: .get, headers: [.cookie: "session=alice"])
            let catalog = try await client.execute(uri: "/catalog", method: .get)
            #expect(catalog.body.text == "catalog 3")
        }
    }
}
