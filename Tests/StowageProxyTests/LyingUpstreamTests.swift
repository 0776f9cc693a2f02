import Foundation
import NIOHTTP1
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

/// An `http://` origin whose framing lies (RFC 9112 §6): the client gets the response as framed
/// or a 502, never bytes past it; nothing wrong is stored; and the next request on the pooled
/// connection gets its own response.
@Suite struct LyingUpstreamTests {
    /// `bad` for `/bad`, and a good answer to every other path.
    static func origin(_ bad: @escaping @Sendable (String) -> ScriptedUpstream.Answer) throws -> ScriptedUpstream {
        try ScriptedUpstream { received in
            received.path == "/bad" ? bad(received.method) : .send(ok("fine", "Cache-Control: no-store"))
        }
    }

    /// The client's whole transcript for one request, on its own connection.
    static func transcript(_ request: String, port: Int) async throws -> String {
        try await onOwnThread {
            let socket = try RawSocket(port: port, receiveTimeout: 20)
            socket.send(request)
            return socket.readTextUntilClosed()
        }
    }

    static let smuggled = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=60\r\n\r\nEVIL"

    @Test(
        "a response whose framing lies: the client sees it as framed or a 502, the next requests get their own",
        arguments: [
            (
                "Content-Length with Transfer-Encoding: chunked",
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=60\r\n\r\n"
                    + "5\r\nhello\r\n0\r\n\r\n"
            ),
            (
                "two different Content-Length fields",
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\nCache-Control: max-age=60\r\n\r\nhello"
            ),
            (
                "a Content-Length list of two values",
                "HTTP/1.1 200 OK\r\nContent-Length: 3, 5\r\nCache-Control: max-age=60\r\n\r\nhello"
            ),
            (
                "a negative Content-Length",
                "HTTP/1.1 200 OK\r\nContent-Length: -1\r\nCache-Control: max-age=60\r\n\r\nx"
            ),
            ("a Content-Length shorter than the body", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello" + smuggled),
            ("a second response after the first", ok("first", "Cache-Control: no-store") + smuggled),
            (
                "a 1xx after the final response",
                ok("first", "Cache-Control: no-store") + "HTTP/1.1 103 Early Hints\r\n\r\n"
            ),
            (
                "a 204 with a body",
                "HTTP/1.1 204 No Content\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n" + smuggled
            ),
            (
                "a chunk size that does not parse",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
            ),
            (
                "a chunk size past 64 bits",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nhello\r\n0\r\n\r\n"
            ),
            (
                "a chunk shorter than its size",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n" + smuggled
            ),
        ]
    )
    func lyingFraming(_ name: String, _ answer: String) async throws {
        let origin = try Self.origin { _ in .send(answer) }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            for round in 1...2 {
                let text = try await Self.transcript(
                    "GET /bad HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n",
                    port: h.proxyPort
                )
                #expect(!text.contains("EVIL"), "\(name) round \(round): \(text)")
                if let split = text.range(of: "\r\n\r\n") {
                    let head = text[..<split.lowerBound].lowercased()
                    let body = text[split.upperBound...]
                    if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
                        let declared = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
                        if !head.hasPrefix("http/1.1 204") {
                            #expect(
                                declared == body.utf8.count,
                                "\(name): the body is the length the client was told: \(text)"
                            )
                        }
                    }
                    #expect(!head.contains("transfer-encoding") || !head.contains("content-length"), "\(name): \(text)")
                }
                for _ in 1...2 {
                    let next = try await h.get("/good")
                    #expect(next.status == 200 && next.text == "fine", "\(name): \(next.status) \(next.text)")
                }
            }
        }
    }

    @Test(
        "RFC 9112 §6.1: an HTTP/1.0 response with Transfer-Encoding has faulty framing: a 502, not stored, not reused"
    )
    func transferEncodingInHTTP10() async throws {
        let origin = try Self.origin { _ in
            .send(
                "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n"
                    + "Cache-Control: max-age=60\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            for _ in 1...2 {
                let reply = try await h.get("/bad")
                #expect(reply.status == 502, "\(reply.status) \(reply.cacheStatus) \(reply.text)")
            }
            #expect(origin.requestCount == 2, "the response was not stored")
            let next = try await h.get("/good")
            #expect(next.status == 200 && next.text == "fine")
            #expect(origin.connectionCount == 3, "no connection that carried one was reused")
        }
    }

    @Test("a HEAD response that carries a body: the body is not taken for the next response")
    func headWithBody() async throws {
        let smuggled = Self.smuggled
        let origin = try Self.origin { _ in
            .send(
                "HTTP/1.1 200 OK\r\nContent-Length: \(smuggled.utf8.count)\r\nCache-Control: no-store\r\n\r\n"
                    + smuggled
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            let head = try await h.get("/bad", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty, "\(head.status)")
            for _ in 1...3 {
                let next = try await h.get("/good")
                #expect(next.status == 200 && next.text == "fine", "\(next.status) \(next.text)")
            }
        }
    }

    @Test("Connection: close from the origin: its connection is not reused")
    func connectionCloseIsHonoured() async throws {
        let origin = try ScriptedUpstream { received in
            .send(ok("v\(received.index)", "Cache-Control: no-store", "Connection: close"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            for index in 1...3 {
                let reply = try await h.get("/a")
                #expect(reply.status == 200 && reply.text == "v\(index)", "\(reply.status) \(reply.text)")
            }
            #expect(origin.connectionCount == 3)
        }
    }

    @Test("an HTTP/1.0 response without keep-alive: its connection is not reused")
    func http10IsNotReused() async throws {
        let origin = try ScriptedUpstream { received in
            .send("HTTP/1.0 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r\n\r\nv\(received.index)")
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            for index in 1...3 {
                let reply = try await h.get("/a")
                #expect(reply.status == 200 && reply.text == "v\(index)", "\(reply.status) \(reply.text)")
            }
            #expect(origin.connectionCount == 3)
        }
    }

    @Test("a 100 Continue to a GET without a body, then the response")
    func continueWithoutBody() async throws {
        let origin = try ScriptedUpstream { received in
            .send("HTTP/1.1 100 Continue\r\n\r\n" + ok("v\(received.index)", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            for index in 1...3 {
                let reply = try await h.get("/a")
                #expect(reply.status == 200 && reply.text == "v\(index)", "\(reply.status) \(reply.text)")
            }
        }
    }

    @Test("33 interim responses are a 502; 32 are forwarded")
    func interimBound() async throws {
        let origin = try ScriptedUpstream { received in
            let count = received.path == "/many" ? 33 : 32
            return .send(
                String(repeating: "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", count: count)
                    + ok("v", "Cache-Control: no-store")
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            let many = try await h.get("/many")
            #expect(many.status == 502)
            let some = try await h.get("/some")
            #expect(some.text == "v")
        }
    }

    @Test("a 1xx whose head is over the limit is a 502, and the proxy goes on")
    func hugeInterim() async throws {
        let origin = try Self.origin { _ in
            .sendAndHang(
                "HTTP/1.1 103 Early Hints\r\nLink: \(String(repeating: "x", count: 200_000))\r\n\r\n" + ok("x")
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            let bad = try await h.get("/bad")
            #expect(bad.status == 502)
            let good = try await h.get("/good")
            #expect(good.text == "fine")
        }
    }

    @Test("a close in the middle of a chunk: the client's response is cut, nothing stored")
    func closeMidChunk() async throws {
        let origin = try Self.origin { _ in
            .sendAndClose(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=60\r\n\r\n"
                    + "10\r\nhalf"
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            for _ in 1...2 {
                let text = try await Self.transcript("GET /bad HTTP/1.1\r\nHost: proxy\r\n\r\n", port: h.proxyPort)
                #expect(!text.hasSuffix("0\r\n\r\n"), "a cut response does not end as complete: \(text)")
            }
            #expect(origin.requestCount == 2)
            let good = try await h.get("/good")
            #expect(good.text == "fine")
        }
    }

    @Test("a cacheable HEAD response, then a GET: the GET gets the body, never the HEAD's empty one")
    func headThenGet() async throws {
        let origin = try ScriptedUpstream { received in
            let response = ok("v\(received.index)", "Cache-Control: max-age=60", "ETag: \"e\"")
            return .send(received.method == "HEAD" ? String(response.dropLast(2)) : response)
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            let head = try await h.get("/a", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty)
            let get = try await h.get("/a")
            #expect(
                get.status == 200 && get.text.count == 2 && get.text.hasPrefix("v"),
                "\(get.text) \(get.cacheStatus)"
            )
            let again = try await h.get("/a")
            #expect(again.text == get.text, "\(again.text) \(again.cacheStatus)")
            let head2 = try await h.get("/a", method: .HEAD)
            #expect(head2.status == 200 && head2.body.isEmpty)
            let last = try await h.get("/a")
            #expect(last.text == get.text)
        }
    }

    @Test("a client that leaves mid-body: the upstream connection is not reused with the rest of that body")
    func clientLeavesMidBody() async throws {
        let large = String(repeating: "b", count: 4_000_000)
        let origin = try Self.origin { _ in .send(ok(large, "Cache-Control: no-store")) }
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(20), upstream: origin.baseURL, script: { _ in .init() }) {
            h in
            let port = h.proxyPort
            _ = try await onOwnThread { () -> String? in
                let socket = try RawSocket(port: port, receiveTimeout: 20, receiveBuffer: 4_096)
                socket.send("GET /bad HTTP/1.1\r\nHost: proxy\r\n\r\n")
                return socket.readHead()
            }
            for _ in 1...3 {
                let next = try await h.get("/good")
                #expect(next.status == 200 && next.text == "fine", "\(next.status) \(next.text.prefix(40))")
            }
        }
    }
}
