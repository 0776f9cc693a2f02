import Foundation
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Testing

/// Interim responses (1xx) from the origin: forwarded to the client, never stored (RFC 9110 §15.2).
@Suite struct InterimForwardingTests {
    static let interims =
        "HTTP/1.1 100 Continue\r\n\r\n"
        + "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"

    @Test("§15.2: a 100 and a 103 from the origin reach an HTTP/1.1 client before the response, and are not stored")
    func interimsAreForwardedNotStored() async throws {
        let origin = try ScriptedUpstream { received in
            .send(Self.interims + ok("v\(received.index)", "Cache-Control: max-age=60"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            let first = try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("GET /page HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                return socket.readTextUntilClosed()
            }
            let continued = try #require(first.range(of: "HTTP/1.1 100 Continue\r\n"), "\(first)")
            let hints = try #require(first.range(of: "HTTP/1.1 103 "), "\(first)")
            let final = try #require(first.range(of: "HTTP/1.1 200 OK\r\n"), "\(first)")
            #expect(first.hasPrefix("HTTP/1.1 100"))
            #expect(continued.lowerBound < hints.lowerBound && hints.lowerBound < final.lowerBound)
            #expect(first.lowercased().contains("link: </style.css>; rel=preload; as=style"))
            #expect(first.hasSuffix("v1"))

            let second = try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("GET /page HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                return socket.readTextUntilClosed()
            }
            #expect(second.hasPrefix("HTTP/1.1 200 OK\r\n"), "a hit carries no interim response: \(second)")
            #expect(second.contains("stowage; hit"), "\(second)")
            #expect(second.hasSuffix("v1"))
            #expect(origin.requestCount == 1)
        }
    }

    @Test("requests collapsed onto one fetch: only the request that went upstream gets the interim response")
    func onlyTheFetchingRequestForwards() async throws {
        // The origin sends its interim response, then holds the final one until the other two
        // requests wait for it (the collapsed requests' timeout sleeps on a clock that never
        // moves, so none gives up and fetches on its own).
        let release = ScriptedUpstream.Release()
        defer { release.open() }
        let origin = try ScriptedUpstream { received in
            .sendHolding(
                "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n",
                until: release,
                then: ok("v\(received.index)", "Cache-Control: max-age=60")
            )
        }
        defer { origin.stop() }
        let waitClock = SteppedClock()
        try await ProxyHarness.run(
            upstream: origin.baseURL,
            configure: { $0.cache.waitClock = waitClock },
            script: { _ in .init() }
        ) { h in
            let port = h.proxyPort
            @Sendable func fetch() async throws -> String {
                try await onOwnThread {
                    let socket = try RawSocket(port: port)
                    socket.send("GET /slow HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                    return socket.readTextUntilClosed()
                }
            }
            let transcripts = try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask { try await fetch() }
                try await eventually { origin.requestCount == 1 }
                for _ in 0..<2 { group.addTask { try await fetch() } }
                try await eventually { h.cache?.collapsedRequestCount == 2 }
                release.open()
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The other two were collapsed onto the one that went upstream.
            #expect(origin.requestCount == 1)
            #expect(transcripts.allSatisfy { $0.hasSuffix("v1") }, "\(transcripts)")
            let forwarded = transcripts.filter { $0.contains("HTTP/1.1 103 ") }
            #expect(forwarded.count == 1, "\(transcripts)")
        }
    }

    @Test("§15.2: an HTTP/1.0 client gets no interim response, only the final one")
    func noInterimsToHTTP10() async throws {
        let origin = try ScriptedUpstream { received in
            .send(Self.interims + ok("v\(received.index)", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            let text = try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("GET /old HTTP/1.0\r\nHost: proxy\r\n\r\n")
                return socket.readTextUntilClosed()
            }
            #expect(text.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(text)")
            #expect(!text.contains(" 100 ") && !text.contains(" 103 "), "\(text)")
            #expect(text.hasSuffix("v1"))
        }
    }

    @Test("a 101 from the origin is not forwarded: the request is a 502")
    func switchingProtocolsIsRefused() async throws {
        let origin = try ScriptedUpstream { _ in
            .sendAndHang("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n")
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let reply = try await h.get("/socket")
            #expect(reply.status == 502, "\(reply.status) \(reply.text)")
        }
    }

    @Test("an origin that sends interim responses without end is a prompt 502 after a bounded number")
    func endlessInterimsAreBounded() async throws {
        let origin = try ScriptedUpstream { _ in
            .repeatThenClose("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", count: 1_000_000)
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            let text = try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("GET /hints HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                return socket.readTextUntilClosed()
            }
            let forwarded = text.components(separatedBy: "HTTP/1.1 103").count - 1
            #expect(forwarded <= 32, "\(forwarded) interim responses forwarded")
            #expect(text.contains("HTTP/1.1 502 Bad Gateway\r\n"), "\(text.suffix(300))")
        }
    }
}
