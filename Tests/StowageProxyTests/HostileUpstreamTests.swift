import Foundation
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import StowageTesting
import Synchronization
import Testing

/// An `http://` origin that answers badly: the client gets a 502 or 504, or a response cut short,
/// and nothing broken is stored; the proxy goes on serving.
@Suite struct HostileUpstreamTests {
    /// A bad answer to `/bad`; every other path gets a good one.
    static func origin(_ bad: ScriptedUpstream.Answer) throws -> ScriptedUpstream {
        try ScriptedUpstream { received in
            received.path == "/bad" ? bad : .send(ok("fine", "Cache-Control: no-store"))
        }
    }

    /// Runs `body` with a proxy in front of `origin` whose 30 s upstream timeout runs on the
    /// returned clock, which only the test moves: the origin's silence passes the timeout when
    /// the test says, never because a loaded machine is slow to relay the bytes that came.
    static func runOnSteppedClock(
        _ origin: ScriptedUpstream,
        _ body: (ProxyHarness, SteppedClock) async throws -> Void
    ) async throws {
        let clock = SteppedClock()
        try await ProxyHarness.run(
            upstreamTimeout: .seconds(30),
            upstream: origin.baseURL,
            configure: { $0.timeoutClock = clock },
            script: { _ in .init() }
        ) { h in try await body(h, clock) }
    }

    /// Moves `clock` on by the upstream timeout until `finished` is set: each byte the origin
    /// sends re-arms the proxy's timer, so one step may not be enough.
    static func advance(_ clock: SteppedClock, until finished: ReadFinished) async throws {
        try await eventually {
            clock.advance(by: .seconds(30))
            return finished.flag.load(ordering: .acquiring)
        }
    }

    @Test(
        "a bad answer is a 502, nothing is stored, and the next request is served",
        arguments: [
            ("garbage", ScriptedUpstream.Answer.sendAndClose("HELLO THERE\r\n\r\n")),
            ("a status line that does not parse", .sendAndHang("HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n")),
            (
                "a head over 80 KiB",
                .sendAndHang(
                    "HTTP/1.1 200 OK\r\nX-Big: \(String(repeating: "x", count: 200_000))\r\nContent-Length: 2\r\n\r\nok"
                )
            ),
            ("a close before any answer", .close),
            ("a close in the middle of the head", .sendAndClose("HTTP/1.1 200 OK\r\nContent-Le")),
        ]
    )
    func badAnswerIsBadGateway(_ name: String, _ answer: ScriptedUpstream.Answer) async throws {
        let origin = try Self.origin(answer)
        defer { origin.stop() }
        // The upstream timeout is an hour (a timeout would be a 504 anyway): a 502 that arrives
        // at all came from the bad answer, not from a timer, however slowly a loaded machine runs.
        try await ProxyHarness.run(upstreamTimeout: .seconds(3_600), upstream: origin.baseURL, script: { _ in .init() })
        {
            h in
            let reply = try await h.get("/bad")
            #expect(reply.status == 502, "\(name): \(reply.status) \(reply.text)")
            let again = try await h.get("/bad")
            #expect(!again.cacheStatus.contains("hit"), "\(name): \(again.cacheStatus)")
            let next = try await h.get("/good")
            #expect(next.status == 200 && next.text == "fine", "\(name): \(next.status) \(next.text)")
        }
    }

    // A timer that never fired would hold the request, and the proxy's shutdown behind it: the
    // time limit turns that hang into a failure.
    @Test("an origin that never sends a head is a 504 within the upstream timeout", .timeLimit(.minutes(5)))
    func silentOriginIsGatewayTimeout() async throws {
        let origin = try Self.origin(.sendAndHang(""))
        defer { origin.stop() }
        // The timeout runs on a clock the test moves (ProxyConfiguration.timeoutClock): it
        // passes for /bad once its request is upstream, and never while /good is served, however
        // slowly a loaded machine runs either.
        try await Self.runOnSteppedClock(origin) { h, clock in
            async let bad = h.get("/bad")
            // The exchange arms its timer before its request goes out.
            try await eventually { origin.requestCount == 1 }
            clock.advance(by: .seconds(30))
            let reply = try await bad
            #expect(reply.status == 504, "\(reply.status) \(reply.text)")
            #expect(try await h.get("/good").text == "fine")
        }
    }

    @Test("a body cut short by the close is never completed nor stored")
    func truncatedBodyIsNotStored() async throws {
        let origin = try Self.origin(
            .sendAndClose(
                "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\nCache-Control: max-age=60\r\n\r\n"
                    + String(repeating: "t", count: 100_000)
            )
        )
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            for _ in 1...2 {
                let outcome = try await RawSocket.exchange("GET /bad HTTP/1.1\r\nHost: proxy\r\n\r\n", port: port)
                if let outcome {
                    // A short body collected before the head is sent is refused whole.
                    #expect(outcome.head.hasPrefix("HTTP/1.1 502"), "\(outcome.head)")
                }
            }
            #expect(origin.requestCount == 2, "the truncated response was not served from the cache")
            #expect(try await h.get("/good").text == "fine")
        }
    }

    @Test("a short uncacheable body cut short by the close is a 502, never half a response")
    func shortBodyCutIsBadGateway() async throws {
        // Read whole before the response is handed over (UpstreamClient's wholeBodyLimit), as a
        // short body the cache stores is: what is cut is refused, not forwarded cut.
        let origin = try Self.origin(
            .sendAndClose(
                "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nCache-Control: no-store\r\n\r\n"
                    + String(repeating: "t", count: 500)
            )
        )
        defer { origin.stop() }
        try await ProxyHarness.run(upstreamTimeout: .seconds(3_600), upstream: origin.baseURL, script: { _ in .init() })
        {
            h in
            let reply = try await h.get("/bad")
            #expect(reply.status == 502, "\(reply.status) \(reply.text)")
            let next = try await h.get("/good")
            #expect(next.status == 200 && next.text == "fine", "\(next.status) \(next.text)")
        }
    }

    @Test("an origin that stalls in a short body is a 504 within the read timeout", .timeLimit(.minutes(5)))
    func shortBodyStallIsGatewayTimeout() async throws {
        let origin = try Self.origin(
            .sendAndHang(
                "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nCache-Control: no-store\r\n\r\n"
                    + String(repeating: "s", count: 500)
            )
        )
        defer { origin.stop() }
        try await Self.runOnSteppedClock(origin) { h, clock in
            let finished = ReadFinished()
            async let bad = {
                defer { finished.flag.store(true, ordering: .releasing) }
                return try await h.get("/bad")
            }()
            try await eventually { origin.requestCount == 1 }
            try await Self.advance(clock, until: finished)
            let reply = try await bad
            #expect(reply.status == 504, "\(reply.status) \(reply.text)")
            #expect(try await h.get("/good").text == "fine")
        }
    }

    @Test("an origin that stalls mid-body: the client's response is cut within the timeout, nothing stored")
    func stallMidBodyIsCut() async throws {
        let origin = try Self.origin(
            .sendAndHang(
                "HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\nCache-Control: no-store\r\n\r\n"
                    + String(repeating: "s", count: 300_000)
            )
        )
        defer { origin.stop() }
        try await Self.runOnSteppedClock(origin) { h, clock in
            let port = h.proxyPort
            let finished = ReadFinished()
            let reading = Task {
                try await onOwnThread { () -> (head: String, body: String)? in
                    defer { finished.flag.store(true, ordering: .releasing) }
                    let socket = try RawSocket(port: port, receiveTimeout: 300)
                    socket.send("GET /bad HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    return socket.readResponse()
                }
            }
            try await eventually { origin.requestCount == 1 }
            try await Self.advance(clock, until: finished)
            let outcome = try await reading.value
            // Cut mid-body; or, when the clock passed before the head came, a 504. Never a
            // completed response.
            #expect(outcome == nil || outcome?.head.hasPrefix("HTTP/1.1 504") == true, "\(outcome?.head ?? "")")
            #expect(try await h.get("/good").text == "fine")
        }
    }
}

/// Set once a raw client's read on its own thread has ended.
final class ReadFinished: Sendable {
    let flag = Atomic<Bool>(false)
}
