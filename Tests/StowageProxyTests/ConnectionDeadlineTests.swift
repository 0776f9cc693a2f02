import Foundation
import StowageCore
import StowageHTTPTestSupport
import StowageTestSupport
import StowageTesting
import Testing

@testable import StowageProxy

/// What a client connection may hold: nginx's `client_header_timeout` and `keepalive_timeout`,
/// and RFC 9112 §9.3's persistence rules, through the real proxy on loopback.
@Suite struct ConnectionDeadlineTests {
    /// Seconds `read` took; the socket's own receive timeout (30 s, for a loaded machine) bounds it.
    static func timed<T>(_ read: () -> T) -> (T, Double) {
        let start = ContinuousClock.now
        let value = read()
        return (value, (ContinuousClock.now - start).timeInterval)
    }

    static let versioned: TestOriginServer.Script = { r in
        .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
    }

    @Test(
        "a slowloris head, one byte at a time, is cut at the head deadline however often bytes arrive",
        .timeLimit(.minutes(5))
    )
    func slowlorisHeadIsCut() async throws {
        // The deadline runs on a clock the test moves (ProxyConfiguration.timeoutClock), so a
        // loaded machine's pauses neither cut the head early nor let it through.
        let clock = SteppedClock()
        try await ProxyHarness.run(
            configure: {
                $0.requestHeadTimeout = .seconds(10)
                $0.timeoutClock = clock
            },
            script: { _ in .init(body: "never") }
        ) { h in
            let before = clock.sleeperCount
            let socket = try RawSocket(port: h.proxyPort, receiveTimeout: 30)
            // The head deadline is armed when the connection opens, its timer a new sleeper.
            try await eventually { clock.sleeperCount == before + 1 }
            let closed = try await onOwnThread { () -> Bool in
                // 12 s of a header byte every 2 s: a deadline that restarted on each byte would
                // leave the connection open until 10 s after the last one.
                for byte in "GET /slow HTTP/1.1\r\nX-A: b".utf8.prefix(6) {
                    socket.send(String(UnicodeScalar(byte)))
                    clock.advance(by: .seconds(2))
                }
                // A close (a FIN, or a reset for the unread head) ends the read at once; left
                // open, the read waits for its 30 s receive timeout.
                let (read, waited) = Self.timed { socket.readUntilClosed() }
                return read.bytes == 0 && (read.closed || waited < 20)
            }
            #expect(closed, "closed without an answer once the head deadline passed")
            #expect(h.origin.requestCount == 0)
        }
    }

    @Test(
        "a kept-alive connection is closed after the idle deadline, and serves requests before it",
        .timeLimit(.minutes(5))
    )
    func idleKeepAliveIsClosed() async throws {
        // On a clock the test moves: the second request comes 2 s into a 3 s idle deadline
        // however slowly the client thread runs, and the close comes when the clock passes it.
        let clock = SteppedClock()
        try await ProxyHarness.run(
            configure: {
                $0.keepAliveTimeout = .seconds(3)
                $0.timeoutClock = clock
            },
            script: { r in .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)") }
        ) { h in
            let port = h.proxyPort
            let (second, closed) = try await onOwnThread { () -> (String?, Bool) in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send("GET /a HTTP/1.1\r\nHost: proxy\r\n\r\n")
                // The idle deadline is armed before the response is written.
                _ = socket.readResponse()
                clock.advance(by: .seconds(2))
                socket.send("GET /a HTTP/1.1\r\nHost: proxy\r\n\r\n")
                let second = socket.readResponse()?.body
                clock.advance(by: .seconds(3))
                // A close ends the read at once; left open, it waits for its 60 s receive timeout.
                let (read, waited) = Self.timed { socket.readUntilClosed() }
                return (second, read.bytes == 0 && (read.closed || waited < 20))
            }
            #expect(second == "v1", "the second request on the connection was served")
            #expect(closed, "closed by the idle deadline")
        }
    }

    @Test(
        "RFC 9112 §9.3: HTTP/1.0 without keep-alive, and Connection: Close in any case, get one response, then the close",
        arguments: [
            "GET /a HTTP/1.0\r\nHost: proxy\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: proxy\r\nConnection: Close\r\n\r\n",
        ]
    )
    func oneRequestConnections(request: String) async throws {
        try await ProxyHarness.run(script: Self.versioned) { h in
            let port = h.proxyPort
            let (response, next, closedAfter) = try await onOwnThread {
                () -> ((head: String, body: String)?, String?, Double) in
                let socket = try RawSocket(port: port, receiveTimeout: 30)
                socket.send(request)
                let response = socket.readResponse()
                let (head, waited) = Self.timed { socket.readHead() }
                return (response, head, waited)
            }
            #expect(next == nil)
            #expect(response?.body == "v1")
            #expect(
                response?.head.lowercased().contains("connection: close") == true,
                "\(response?.head ?? "closed")"
            )
            if request.contains("HTTP/1.0") { #expect(response?.head.hasPrefix("HTTP/1.0 200") == true) }
            // Left open, the read would wait for its 30 s receive timeout.
            #expect(closedAfter < 20, "closed after the response, not left open: \(closedAfter) s")
        }
    }

    @Test("HTTP/1.0 with Connection: keep-alive keeps the connection for the next request")
    func http10KeepAlive() async throws {
        try await ProxyHarness.run(script: Self.versioned) { h in
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [(head: String, body: String)?] in
                let socket = try RawSocket(port: port, receiveTimeout: 30)
                var responses: [(head: String, body: String)?] = []
                for _ in 0..<2 {
                    socket.send("GET /k HTTP/1.0\r\nHost: proxy\r\nConnection: keep-alive\r\n\r\n")
                    responses.append(socket.readResponse())
                }
                return responses
            }
            #expect(responses.map { $0?.body } == ["v1", "v1"])
            #expect(responses.allSatisfy { $0?.head.lowercased().contains("connection: keep-alive") == true })
        }
    }

    @Test(
        "send_timeout: a client that stops reading a large response is cut off; it cannot hold the body forever",
        .timeLimit(.minutes(5))
    )
    func clientThatStopsReadingIsCut() async throws {
        let size = 16 << 20
        // The send deadline runs on a clock the test moves: the client reads nothing while the
        // clock passes it, instead of sleeping through eight real send timeouts.
        let clock = SteppedClock()
        try await ProxyHarness.run(
            configure: {
                $0.sendTimeout = .seconds(1)
                // Beyond the clock's reach below: the head timer leaves the clock's sleepers only
                // when the connection closes.
                $0.requestHeadTimeout = .seconds(86_400)
                $0.timeoutClock = clock
            },
            script: { _ in .init(fields: [("Cache-Control", "max-age=60")], body: String(repeating: "x", count: size)) }
        ) { h in
            // Stored first, so the stalled client's response comes from the cache at once, not
            // at the pace of an origin on a loaded machine.
            #expect(try await h.get("/big").text.count == size)
            let before = clock.sleeperCount
            let socket = try RawSocket(port: h.proxyPort, receiveTimeout: 30, receiveBuffer: 4_096)
            socket.send("GET /big HTTP/1.1\r\nHost: proxy\r\n\r\n")
            // The connection's head timer, then the send deadline once its buffers are full.
            try await eventually { clock.sleeperCount == before + 2 }
            // The deadline passes with no progress (the client reads nothing) and the connection
            // closes, cancelling its head timer: the clock is back to the sleepers it had. (Were
            // the deadline never to fire, the read below would get the whole body and no close.)
            try await eventually {
                clock.advance(by: .seconds(1))
                return clock.sleeperCount == before
            }
            let (read, closed) = try await onOwnThread { socket.readUntilClosed() }
            #expect(closed, "the proxy closed the connection")
            #expect(read < size, "cut off before the whole body: \(read) of \(size) bytes")
        }
    }

    @Test("a client that reads slowly but steadily gets the whole response past the send timeout")
    func slowSteadyReaderIsServed() async throws {
        let size = 2 << 20
        try await ProxyHarness.run(
            // 3 s: far above the reader's 20 ms pauses, so that a reader thread a loaded machine
            // leaves waiting a second still counts as steady.
            configure: { $0.sendTimeout = .seconds(3) },
            script: { _ in .init(fields: [("Cache-Control", "max-age=60")], body: String(repeating: "y", count: size)) }
        ) { h in
            // Stored first: the response below comes from the cache at the reader's pace, not at
            // an origin's on a loaded machine.
            #expect(try await h.get("/steady").text.count == size)
            let port = h.proxyPort
            let (response, took) = try await onOwnThread { () -> ((head: String, body: String)?, Duration) in
                let socket = try RawSocket(port: port, receiveTimeout: 30, receiveBuffer: 4_096)
                let started = ContinuousClock.now
                socket.send("GET /steady HTTP/1.1\r\nHost: proxy\r\n\r\n")
                usleep(1_000_000)  // a pause shorter than the send timeout
                // At most 8 KiB per read (the receive buffer), 20 ms apart: the whole response
                // takes longer than the send timeout, and no write waits anywhere near it.
                let response = socket.readResponse(pausingBeforeEachRead: 20_000)
                return (response, ContinuousClock.now - started)
            }
            #expect(response?.body.count == size)
            #expect(took > .seconds(3), "the response outlasted the send timeout: \(took)")
        }
    }

    @Test("timeouts out of range are refused when the proxy is made, with the property named")
    func timeoutsOutOfRange() throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        for (name, change) in [
            ("upstreamTimeout", { (c: inout ProxyConfiguration) in c.upstreamTimeout = .seconds(9_999_999_999_999) }),
            ("requestHeadTimeout", { (c: inout ProxyConfiguration) in c.requestHeadTimeout = .zero }),
            ("keepAliveTimeout", { (c: inout ProxyConfiguration) in c.keepAliveTimeout = .seconds(-1) }),
            ("sendTimeout", { (c: inout ProxyConfiguration) in c.sendTimeout = .seconds(86_401) }),
        ] as [(String, (inout ProxyConfiguration) -> Void)] {
            var configuration = ProxyConfiguration(
                upstream: try .init(parsing: "http://127.0.0.1:9"),
                cacheDirectory: scratch.url,
                port: 0
            )
            change(&configuration)
            #expect {
                _ = try CachingProxy(configuration: configuration)
            } throws: { error in
                (error as? StowageError)?.code == .invalidConfiguration && "\(error)".contains(name)
            }
        }
    }
}
