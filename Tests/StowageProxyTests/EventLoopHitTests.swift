import Foundation
import HTTPTypes
import NIOHTTP1
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Synchronization
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
        // Fresh for an hour: these proxies keep the real clock, which a loaded machine's minute outruns.
        return .init(fields: [("Cache-Control", "max-age=3600")], body: "body of \(path)")
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

    /// The same request on one kept-alive connection, `count` times, with `between` run before
    /// each but the first.
    private static func repeated(
        _ request: String,
        port: Int,
        count: Int,
        between: @escaping @Sendable () -> Void = {}
    ) async throws -> [(head: String, body: String)?] {
        try await onOwnThread {
            let socket = try RawSocket(port: port, receiveTimeout: 30)
            var responses: [(head: String, body: String)?] = []
            for index in 0..<count {
                if index > 0 { between() }
                socket.send(request)
                responses.append(socket.readResponse())
            }
            return responses
        }
    }

    private static func field(_ name: String, in head: String?) -> String? {
        head?.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    @Test("a hit answered again from the bytes kept for it carries the Age and ttl of the moment it is sent")
    func reusedBytesFollowTheClock() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: { $0.cache.clock = clock.cacheClock },
            script: { _ in .init(fields: [("Cache-Control", "max-age=60")], body: "aging") }
        ) { h in
            _ = try await h.get("/age")
            let responses = try await Self.repeated(
                "GET /age HTTP/1.1\r\nHost: proxy\r\n\r\n",
                port: h.proxyPort,
                count: 4,
                between: { clock.advance(by: .seconds(5)) }
            )
            let ages = responses.map { Self.field("Age", in: $0?.head) }
            let statuses = responses.map { Self.field("Cache-Status", in: $0?.head) ?? "" }
            #expect(ages == ["0", "5", "10", "15"].map(Optional.some), "\(ages)")
            #expect(statuses.allSatisfy { $0.hasPrefix("stowage; hit") }, "\(statuses)")
            #expect(responses.allSatisfy { $0?.body == "aging" })
            #expect(h.origin.requestCount == 1)
            // Stale now: not the kept bytes, but the async path (revalidated with the origin).
            clock.advance(by: .seconds(60))
            let stale = try await Self.repeated("GET /age HTTP/1.1\r\nHost: proxy\r\n\r\n", port: h.proxyPort, count: 1)
            #expect(Self.field("Cache-Status", in: stale.first??.head)?.contains("hit") == false)
            #expect(h.origin.requestCount == 2)
        }
    }

    @Test("a hit answered again from the bytes kept for it after the clock is set back: the Age of now")
    func reusedBytesFollowAClockSetBack() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: { $0.cache.clock = clock.cacheClock },
            script: { _ in .init(fields: [("Cache-Control", "max-age=60")], body: "aging") }
        ) { h in
            _ = try await h.get("/age")
            // Given: hits at +10 s, then the clock set back 8 s (an NTP step).
            let steps: [Duration] = [.seconds(10), .seconds(-8)]
            let step = Mutex(0)
            let responses = try await Self.repeated(
                "GET /age HTTP/1.1\r\nHost: proxy\r\n\r\n",
                port: h.proxyPort,
                count: 3,
                between: {
                    let index = step.withLock { index in
                        defer { index += 1 }
                        return index
                    }
                    clock.advance(by: steps[index])
                }
            )
            let ages = responses.map { Self.field("Age", in: $0?.head) }
            #expect(ages == ["0", "10", "2"].map(Optional.some), "\(ages)")
            #expect(h.origin.requestCount == 1)
        }
    }

    @Test("the bytes kept for a hit are not sent after a purge, nor to a request that differs in one field")
    func reusedBytesFollowTheStore() async throws {
        try await ProxyHarness.run(
            configure: { $0.admin = .init(port: 0) },
            script: { r in .init(fields: [("Cache-Control", "max-age=60"), ("ETag", "\"e\"")], body: "v\(r.index)") }
        ) { h in
            let request = "GET /kept HTTP/1.1\r\nHost: proxy\r\n\r\n"
            _ = try await h.get("/kept")
            let before = try await Self.repeated(request, port: h.proxyPort, count: 2)
            #expect(before.map { $0?.body } == ["v1", "v1"])
            let conditional = try await Self.repeated(
                "GET /kept HTTP/1.1\r\nHost: proxy\r\nIf-None-Match: \"e\"\r\n\r\n",
                port: h.proxyPort,
                count: 2
            )
            #expect(conditional.allSatisfy { $0?.head.hasPrefix("HTTP/1.1 304") == true }, "\(conditional)")
            let admin = try ProxyAdminClient(address: "127.0.0.1:\(h.adminPort ?? 0)")
            #expect(try await admin.invalidate(url: h.origin.baseURL + "/kept"))
            let after = try await Self.repeated(request, port: h.proxyPort, count: 2)
            #expect(after.map { $0?.body } == ["v2", "v2"], "purged: fetched again, then kept again")
            #expect(h.origin.requestCount == 2)
        }
    }
}
