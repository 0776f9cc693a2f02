import Foundation
import HTTPTypes
import NIOHTTP1
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Testing

/// Hits held in memory are answered on the connection's event loop (`MemoryHitHandler`); these
/// are the cases where answering there could change what a client sees.
@Suite struct EventLoopHitTests {
    /// `/slow` is uncacheable and takes a second; every other path is cacheable for a minute and
    /// says its path.
    private static let script: TestOriginServer.Script = { received in
        let path = received.head.path ?? "/"
        if path == "/slow" {
            return .init(fields: [("Cache-Control", "no-store")], body: "slow", delay: .seconds(1))
        }
        return .init(fields: [("Cache-Control", "max-age=60")], body: "body of \(path)")
    }

    @Test("RFC 9112 §9.3.2: a hit pipelined behind a slow miss on one connection is answered after it")
    func hitBehindSlowMissKeepsOrder() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            #expect(try await h.get("/cached").text == "body of /cached")
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [(head: String, body: String)] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(
                    "GET /slow HTTP/1.1\r\nHost: proxy\r\n\r\n" + "GET /cached HTTP/1.1\r\nHost: proxy\r\n\r\n"
                        + "GET /cached HTTP/1.1\r\nHost: proxy\r\n\r\n"
                )
                return socket.readResponses(3)
            }
            #expect(responses.map(\.body) == ["slow", "body of /cached", "body of /cached"])
            #expect(responses.dropFirst().allSatisfy { $0.head.contains("stowage; hit") }, "\(responses.map(\.head))")
        }
    }

    @Test("RFC 9112 §9.3.2: hits pipelined in one write come back whole and in order")
    func pipelinedHitsInOrder() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            let paths = (0..<20).map { "/p\($0)" }
            for path in paths { _ = try await h.get(path) }
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [(head: String, body: String)] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(paths.map { "GET \($0) HTTP/1.1\r\nHost: proxy\r\n\r\n" }.joined())
                return socket.readResponses(paths.count)
            }
            #expect(responses.map(\.body) == paths.map { "body of \($0)" })
            #expect(h.origin.requestCount == paths.count)
        }
    }

    @Test("a hit to HTTP/1.0 without keep-alive is an HTTP/1.0 response, and the connection then closes")
    func http10Hit() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            #expect(try await h.get("/old").text == "body of /old")
            let port = h.proxyPort
            let (response, next) = try await onOwnThread { () -> ((head: String, body: String)?, String?) in
                let socket = try RawSocket(port: port, receiveTimeout: 30)
                socket.send("GET /old HTTP/1.0\r\nHost: proxy\r\n\r\n")
                return (socket.readResponse(), socket.readHead())
            }
            #expect(response?.head.hasPrefix("HTTP/1.0 200") == true, "\(response?.head ?? "closed")")
            #expect(response?.head.lowercased().contains("connection: close") == true)
            #expect(response?.head.contains("stowage; hit") == true)
            #expect(response?.body == "body of /old")
            #expect(next == nil, "closed after the response")
        }
    }

    @Test("a hit whose origin sent no Date gets one; a GET with a body and a HEAD are answered as before")
    func dateBodyAndHead() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/d")
            let hit = try await h.get("/d")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"))
            #expect(hit.headers["Date"].count == 1, "\(hit.headers)")
            let withBody = try await h.get("/d", body: Array("ignored".utf8))
            #expect(withBody.text == "body of /d")
            let head = try await h.get("/d", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty)
            #expect(head.cacheStatus.hasPrefix("stowage; hit"))
            #expect(h.origin.requestCount == 1)
        }
    }
}
