import Foundation
import HTTPTypes
import NIOHTTP1
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

@testable import StowageProxy

/// Spilled answers (`HTTPCache+SpilledAnswers.swift`) as a hostile client, an operator and
/// another process would meet them: each invalidation is final for them, a clear anywhere
/// empties the answers file, and the memory level stays within its capacity.
@Suite("Spilled answers under attack", .timeLimit(.minutes(10)))
struct SpilledAnswerAttackTests {
    /// `/u/N` says its path and the origin's request number, tagged `u-N`; fresh for an hour.
    static let script: TestOriginServer.Script = { received in
        let path = received.head.path ?? "/"
        let tag = "u-" + path.split(separator: "/").last.map(String.init)!
        return .init(
            fields: [("Cache-Control", "max-age=3600"), ("Surrogate-Key", tag)],
            body: "\(path) #\(received.index)"
        )
    }

    static func configure(_ configuration: inout ProxyConfiguration) {
        configuration.admin = .init(port: 0)
        configuration.cache.memoryCapacity = SpilledAnswerProxyTests.memoryCapacity
        configuration.cache.tagFields = [HTTPField.Name("Surrogate-Key")!]
    }

    /// Warms `/u/0` … `/u/11`, reads `path` from disk (spilled), then again: the reply from the spill.
    static func spilled(_ h: ProxyHarness, _ path: String) async throws -> ProxyHarness.Reply {
        try await SpilledAnswerProxyTests.warm(h)
        for _ in 0..<2 { _ = try await h.get(path) }
        let before = try SpilledAnswerProxyTests.spilledHits(h)
        let reply = try await h.get(path)
        #expect(try SpilledAnswerProxyTests.spilledHits(h) == before + 1, "\(path) served from the spill")
        return reply
    }

    @Test("a clear through another handle empties the answers file, not only memory")
    func clearElsewhereEmptiesTheSpill() async throws {
        try await ProxyHarness.run(configure: Self.configure, script: Self.script) { h in
            let spilled = try await Self.spilled(h, "/u/0")
            let cache = try #require(h.cache)
            #expect(cache.spilledAnswerFigures.bytes > 0)
            let directory = try #require(cache.disk?.directory)
            let other = try HTTPCache(directory: directory, configuration: cache.configuration)
            _ = try await other.removeAll()
            try await other.close()
            let hits = cache.spilledAnswerFigures.hits
            let after = try await h.get("/u/0")
            #expect(after.text != spilled.text, "\(after.text)")
            #expect(cache.spilledAnswerFigures.hits == hits)
            #expect(cache.spilledAnswerFigures.bytes == 0, "the cleared responses' bytes stay in the answers file")
        }
    }

    @Test("a ban by prefix is final for a spilled answer")
    func banByPrefixEndsSpilledAnswer() async throws {
        try await ProxyHarness.run(configure: Self.configure, script: Self.script) { h in
            let spilled = try await Self.spilled(h, "/u/1")
            #expect(try await h.admin(.POST, "/ban?prefix=\(h.origin.baseURL)/u/1").status == 200)
            let after = try await h.get("/u/1")
            #expect(after.text != spilled.text && after.text.hasPrefix("/u/1 #"), "\(after.text)")
        }
    }

    @Test("a ban by tag is final for a spilled answer")
    func banByTagEndsSpilledAnswer() async throws {
        try await ProxyHarness.run(configure: Self.configure, script: Self.script) { h in
            let spilled = try await Self.spilled(h, "/u/2")
            #expect(try await h.admin(.POST, "/ban?tag=u-2").status == 200)
            let after = try await h.get("/u/2")
            #expect(after.text != spilled.text && after.text.hasPrefix("/u/2 #"), "\(after.text)")
        }
    }

    @Test("an unsafe request to the URL invalidates its spilled answer (RFC 9111 §4.4)")
    func unsafeMethodEndsSpilledAnswer() async throws {
        try await ProxyHarness.run(configure: Self.configure, script: Self.script) { h in
            let spilled = try await Self.spilled(h, "/u/3")
            let posted = try await h.get("/u/3", method: .POST, body: Array("x".utf8))
            #expect(posted.status == 200)
            let after = try await h.get("/u/3")
            #expect(after.text != spilled.text && after.text.hasPrefix("/u/3 #"), "\(after.text)")
        }
    }

    @Test("HTTP/1.0, Connection: close and HEAD requests of a spilled URL get their own answers")
    func otherRequestsOfASpilledURL() async throws {
        try await ProxyHarness.run(configure: Self.configure, script: Self.script) { h in
            let spilled = try await Self.spilled(h, "/u/4")
            let port = h.proxyPort
            let requests = [
                "GET /u/4 HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n",
                "GET /u/4 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n",
            ]
            for request in requests {
                let responses = try await onOwnThread { () -> [EventLoopHitAttackTests.Parsed] in
                    let socket = try RawSocket(port: port, receiveTimeout: 60)
                    socket.send(request)
                    return EventLoopHitAttackTests.read(socket, bodiless: [false])
                }
                #expect(responses.map(\.text) == [spilled.text], "\(request)")
                let version = request.contains("HTTP/1.0") ? "HTTP/1.0" : "HTTP/1.1"
                #expect(responses.first?.head.hasPrefix(version) == true, "\(responses.first?.head ?? "")")
            }
            let head = try await h.get("/u/4", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty)
            #expect(head.headers["Content-Length"] == [String(spilled.body.count)])
        }
    }

    @Test("many spilled answers: the memory level stays within its capacity")
    func manySpilledAnswersStayWithinCapacity() async throws {
        try await ProxyHarness.run(configure: Self.configure, script: Self.script) { h in
            let cache = try #require(h.cache)
            for n in 0..<40 { _ = try await h.get("/u/\(n)") }
            for _ in 0..<2 {
                for n in 0..<40 {
                    let reply = try await h.get("/u/\(n)")
                    #expect(reply.text.hasPrefix("/u/\(n) #"))
                    #expect(cache.memoryUsage <= SpilledAnswerProxyTests.memoryCapacity, "\(cache.memoryUsage)")
                }
            }
            #expect(h.origin.requestCount == 40)
        }
    }

    @Test(
        "variants that vary on different fields: a request both match gets the newer one from the spill too, as the cache selects it (RFC 9111 §4.1)"
    )
    func variantsVaryingOnDifferentFields() async throws {
        let clock = ManualClock(startingAt: Date())
        // `/v` varies on X-B when the request has it, else on X-A; other paths as `script`.
        let script: TestOriginServer.Script = { received in
            guard received.head.path == "/v" else { return try await Self.script(received) }
            let fields = received.head.headerFields
            let a = fields[HTTPField.Name("X-A")!] ?? "none"
            let b = fields[HTTPField.Name("X-B")!]
            return .init(
                fields: [("Cache-Control", "max-age=3600"), ("Vary", b == nil ? "X-A" : "X-B")],
                body: "/v a=\(a) b=\(b ?? "none") #\(received.index)"
            )
        }
        try await ProxyHarness.run(
            configure: {
                Self.configure(&$0)
                $0.cache.clock = clock.cacheClock
            },
            script: script
        ) { h in
            // Stored: A (Vary: X-A, for X-A: 1), then a second later B (Vary: X-B, for X-B: 2).
            let a = try await h.get("/v", headers: [("X-A", "1")]).text
            clock.advance(by: .seconds(1))
            let b = try await h.get("/v", headers: [("X-A", "2"), ("X-B", "2")]).text
            #expect(a != b)
            // Records read from disk: X-A: 1 alone selects A, spilled for it, and from the spill.
            try await SpilledAnswerProxyTests.warm(h)
            for _ in 0..<3 {
                let reply = try await h.get("/v", headers: [("X-A", "1")])
                #expect(reply.text == a)
            }
            // Both match X-A: 1 with X-B: 2; the cache selects the newer, B.
            let both = try await h.get("/v", headers: [("X-A", "1"), ("X-B", "2")]).text
            #expect(both == b, "got \(both), the cache selects \(b)")
            #expect(h.origin.requestCount == 2 + 12)
        }
    }
}
