import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageHTTPCache
import StowageVapor
import Testing
import Vapor
import VaporTesting

@Suite("Vapor response-cache middleware: hostile requests")
struct HostileRequestTests {
    @Test("A GET with a body reaches the responder with that body, and two bodies never share an answer")
    func getWithBodyReachesResponder() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("search") { request in
                calls.increment()
                return response("results for \(request.body.string ?? "")", headers: ["Cache-Control": "max-age=60"])
            }
        } _: { app, _ in
            for query in ["cats", "dogs"] {
                let answer = try await app.testing().sendRequest(
                    .GET,
                    "/search",
                    headers: ["Content-Length": String(query.utf8.count)],
                    body: ByteBuffer(string: query)
                )
                #expect(answer.text == "results for \(query)")
            }
            #expect(calls.value == 2)
        }
    }

    @Test("A request with a second Host field is answered uncached")
    func secondHostIsNotCached() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("links") { request in
                calls.increment()
                let named = request.headers[.host].last ?? "?"
                return response("http://\(named)/home", headers: ["Cache-Control": "max-age=60"])
            }
        } _: { app, _ in
            var twoHosts = HTTPHeaders()
            twoHosts.add(name: .host, value: "localhost")
            twoHosts.add(name: .host, value: "evil.example")
            _ = try await app.testing().sendRequest(.GET, "/links", headers: twoHosts)
            let next = try await app.testing().sendRequest(.GET, "/links", headers: ["Host": "localhost"])
            #expect(next.text == "http://localhost/home")
            #expect(calls.value == 2)
        }
    }

    @Test("A route's status code outside 100...999 fails that request instead of stopping the process")
    func outOfRangeStatusFailsRequest() async throws {
        try await withCachedApp { app in
            app.get("odd") { _ in
                Response(status: .custom(code: 1000, reasonPhrase: "Odd"), body: .init(string: "odd"))
            }
            app.get("fine") { _ in response("fine", headers: ["Cache-Control": "max-age=60"]) }
        } _: { app, _ in
            let odd = try await app.testing().sendRequest(.GET, "/odd")
            #expect(odd.status == .internalServerError)
            #expect(try await app.testing().sendRequest(.GET, "/fine").text == "fine")
        }
    }

    @Test("A response to a request with a Cookie is not shared unless it says so")
    func cookieRequestAnswerIsNotShared() async throws {
        let calls = CallCounter()
        try await withCachedApp { app in
            app.get("me") { request in
                calls.increment()
                let cookie = request.headers.first(name: .cookie) ?? "nobody"
                return response("hello \(cookie)", headers: ["Cache-Control": "max-age=60"])
            }
        } _: { app, _ in
            let alice = try await app.testing().sendRequest(.GET, "/me", headers: ["Cookie": "session=alice"])
            #expect(alice.text == "hello session=alice")
            #expect(alice.headers.first(name: "Cache-Control") == "private, max-age=60")
            #expect(try await app.testing().sendRequest(.GET, "/me").text == "hello nobody")
            #expect(calls.value == 2)
        }
    }
}
