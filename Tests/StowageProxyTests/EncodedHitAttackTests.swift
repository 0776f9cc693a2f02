import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageProxy

#if canImport(Glibc)
import Glibc
#endif

/// Attacks on hits kept as encoded bytes and written past NIO's HTTP/1 encoder (`EncodedHits`,
/// `EncodedResponse`, `OutboundByteCounter.writeEncoded`), on the HEAD handling that moved from
/// NIO's encoder into `ConnectionTimingHandler`, and on memory's content version
/// (`HTTPCache.decisionStands(_:now:seenAt:)`): a client must get what the async path would
/// give it, and never a response memory no longer holds.
@Suite struct EncodedHitAttackTests {
    typealias Parsed = EventLoopHitAttackTests.Parsed

    static func read(_ socket: RawSocket, bodiless: [Bool]) -> [Parsed] {
        EventLoopHitAttackTests.read(socket, bodiless: bodiless)
    }

    /// `/slow` is uncacheable and slow (holds a connection on the async path); `/bytes/N` is a
    /// body of N bytes; `/v/…` says which request of the origin's it was; anything else says its
    /// path. All but `/slow` are fresh for ten minutes.
    static let script: TestOriginServer.Script = { received in
        let path = received.head.path ?? "/"
        if received.head.method == .post {
            return .init(fields: [("Cache-Control", "no-store")], body: "posted")
        }
        if path == "/slow" {
            return .init(fields: [("Cache-Control", "no-store")], body: "slow", delay: .milliseconds(300))
        }
        let fresh: [(String, String)] = [("Cache-Control", "max-age=600"), ("ETag", "\"e\"")]
        if path.hasPrefix("/bytes/"), let count = Int(path.dropFirst("/bytes/".count)) {
            return .init(fields: fresh, bytes: (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        }
        if path.hasPrefix("/v/") {
            return .init(fields: fresh, body: "v\(received.index)")
        }
        return .init(fields: fresh, body: "body of \(path)")
    }

    // MARK: - Framing

    @Test(
        "a kept hit's body at and around the 16 KiB inline bound is the async path's response, byte for byte",
        arguments: [0, 1, 16_383, 16_384, 16_385, 200_000]
    )
    func inlineBoundBodies(count: Int) async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/bytes/\(count)")
            let request = "GET /bytes/\(count) HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let (loop, async) = try await EventLoopHitAttackTests.bothPaths(request, port: h.proxyPort)
            #expect(
                EventLoopHitAttackTests.comparable(loop) == EventLoopHitAttackTests.comparable(async),
                "\(count) bytes"
            )
            #expect(loop?.body.count == count)
            #expect(loop?.field("content-length") == String(count))
            #expect(loop?.field("transfer-encoding") == nil)
        }
    }

    @Test("kept hits, conditionals, HEADs and bodied GETs pipelined in one write come back in order, each framed")
    func pipelinedKeptHitsAmongOthers() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/k")
            _ = try await h.get("/bytes/20000")
            let get = "GET /k HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let big = "GET /bytes/20000 HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let conditional = "GET /k HTTP/1.1\r\nHost: proxy\r\nIf-None-Match: \"e\"\r\n\r\n"
            let head = "HEAD /k HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let bodied = "GET /k HTTP/1.1\r\nHost: proxy\r\nContent-Length: 5\r\n\r\nabcde"
            let chunked = "GET /k HTTP/1.1\r\nHost: proxy\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
            let expect100 = "GET /k HTTP/1.1\r\nHost: proxy\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"
            let sequence: [(String, Int, String, Bool)] = [
                (get, 200, "body of /k", false), (conditional, 304, "", false), (get, 200, "body of /k", false),
                (head, 200, "", true), (get, 200, "body of /k", false), (bodied, 200, "body of /k", false),
                (get, 200, "body of /k", false), (big, 200, "", false), (chunked, 200, "body of /k", false),
                (conditional, 304, "", false), (expect100, 200, "body of /k", false), (get, 200, "body of /k", false),
                (head, 200, "", true), (big, 200, "", false), (get, 200, "body of /k", false),
            ]
            let text = String(repeating: sequence.map(\.0).joined(), count: 3)
            let bodiless = Array(repeating: sequence.map(\.3), count: 3).flatMap { $0 }
            let port = h.proxyPort
            let responses = try await onOwnThread {
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(text)
                return Self.read(socket, bodiless: bodiless)
            }
            #expect(responses.count == bodiless.count)
            for (index, response) in responses.enumerated() {
                let wanted = sequence[index % sequence.count]
                #expect(response.status == wanted.1, "#\(index): \(response)")
                if wanted.0 == big {
                    #expect(response.body.count == 20_000, "#\(index)")
                } else {
                    #expect(response.text == wanted.2, "#\(index): \(response)")
                }
                if wanted.1 == 304 {
                    #expect(response.field("content-length") == nil, "#\(index): \(response)")
                }
            }
        }
    }

    // MARK: - Persistence

    @Test(
        "RFC 9112 §9.3: a request that does not keep the connection gets its hit, then the close, even after kept hits",
        arguments: [
            "GET /k HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n",
            "GET /k HTTP/1.1\r\nHost: proxy\r\nConnection: keep-alive, close\r\n\r\n",
            "GET /k HTTP/1.0\r\nHost: proxy\r\n\r\n",
            "GET /k HTTP/1.1\r\nHost: proxy\r\nconnection: CLOSE\r\n\r\n",
        ]
    )
    func closingRequestAfterKeptHits(closing: String) async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/k")
            let port = h.proxyPort
            let get = "GET /k HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let text = try await onOwnThread { () -> String in
                let socket = try RawSocket(port: port, receiveTimeout: 30)
                // Two kept hits, the closing request, and one more that must not be answered.
                socket.send(get + get + closing + get)
                return socket.readTextUntilClosed()
            }
            #expect(text.components(separatedBy: "body of /k").count - 1 == 3, "\(text.debugDescription)")
            let heads = text.components(separatedBy: "\r\n\r\n").filter { $0.contains("HTTP/1.") }
            #expect(heads.count == 3, "\(text.debugDescription)")
            #expect(heads.last?.lowercased().contains("connection: close") == true, "\(text.debugDescription)")
        }
    }

    // MARK: - Content version

    /// With a memory level too small to keep a response (20 bytes), every hit is read from the
    /// disk index on the event loop (`LoopHitResponder` with `readsDiskIndex`), and the purge must
    /// be as final for those.
    @Test(
        "a purge moves memory's content version: every kept-alive connection, on either loop, gets the refetch",
        arguments: [nil, 20]
    )
    func purgeReachesEveryConnection(memoryCapacity: Int?) async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                if let memoryCapacity { $0.cache.memoryCapacity = ByteCount(Int64(memoryCapacity)) }
            },
            script: Self.script
        ) { h in
            let port = h.proxyPort
            let request = "GET /v/race HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let sockets = try await onOwnThread {
                try (0..<8).map { _ in try RawSocket(port: port, receiveTimeout: 60) }
            }
            let url = h.origin.baseURL + "/v/race"
            for round in 0..<5 {
                let expected = try await h.get("/v/race").text
                // Each connection keeps the answer as bytes (twice: kept, then from the bytes).
                for socket in sockets {
                    let bodies = try await onOwnThread { () -> [String] in
                        socket.send(request + request)
                        return Self.read(socket, bodiless: [false, false]).map(\.text)
                    }
                    #expect(bodies == [expected, expected], "round \(round)")
                }
                #expect(try await h.admin(.POST, "/purge?url=\(url)").status == 200)
                let refetched = try await h.get("/v/race").text
                #expect(refetched != expected, "round \(round): the purge forced a refetch")
                for (index, socket) in sockets.enumerated() {
                    let body = try await onOwnThread { () -> String in
                        socket.send(request)
                        return Self.read(socket, bodiless: [false]).first?.text ?? "(none)"
                    }
                    #expect(body == refetched, "round \(round), connection \(index)")
                }
            }
        }
    }

    @Test("RFC 9111 §4.4: an unsafe request invalidates a kept hit on the same connection")
    func unsafeRequestInvalidatesKeptHit() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/v/inv")
            let get = "GET /v/inv HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let post = "POST /v/inv HTTP/1.1\r\nHost: proxy\r\nContent-Length: 1\r\n\r\nx"
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                var responses: [Parsed] = []
                for request in [get, get, post, get, get] {
                    socket.send(request)
                    responses += Self.read(socket, bodiless: [false])
                }
                return responses
            }
            let bodies = responses.map(\.text)
            #expect(bodies.count == 5)
            #expect(bodies[0] == "v1" && bodies[1] == "v1" && bodies[2] == "posted", "\(bodies)")
            #expect(bodies[3] == "v3" && bodies[4] == "v3", "\(bodies)")
        }
    }

    @Test("a kept hit stops when the response goes stale: the next request is fetched again")
    func keptHitEndsWithFreshness() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(configure: { $0.cache.clock = clock.cacheClock }, script: versioned(maxAge: 60)) {
            h in
            _ = try await h.get("/short")
            let get = "GET /short HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let port = h.proxyPort
            let bodies = try await onOwnThread { () -> [String] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                var bodies: [String] = []
                for _ in 0..<3 {
                    socket.send(get)
                    bodies += Self.read(socket, bodiless: [false]).map(\.text)
                }
                // Within the second the kept bytes were last checked in, then past freshness.
                clock.advance(by: .milliseconds(100))
                socket.send(get)
                bodies += Self.read(socket, bodiless: [false]).map(\.text)
                clock.advance(by: .seconds(61))
                socket.send(get)
                bodies += Self.read(socket, bodiless: [false]).map(\.text)
                return bodies
            }
            #expect(bodies == ["v1", "v1", "v1", "v1", "v2"])
        }
    }

    // MARK: - Interim responses and HEAD

    @Test("103 Early Hints from the origin between kept hits on one connection: each final response in order")
    func earlyHintsBetweenKeptHits() async throws {
        let upstream = try ScriptedUpstream { received in
            if received.path == "/early" {
                return .send(
                    "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                        + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: no-store\r\n\r\nearly"
                )
            }
            if received.path == "/chunked-head" {
                // A HEAD answered as if chunked, with a body it must not have.
                return .sendAndClose(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: no-store\r\n\r\n5\r\nlying\r\n0\r\n\r\n"
                )
            }
            if received.path == "/lying-head" {
                return .sendAndClose(
                    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: no-store\r\n\r\nlying"
                )
            }
            return .send(ok("kept", "Cache-Control: max-age=600"))
        }
        defer { upstream.stop() }
        try await ProxyHarness.run(upstream: upstream.baseURL, script: { _ in .init() }) { h in
            _ = try await h.get("/k")
            let get = "GET /k HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let early = "GET /early HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let headEarly = "HEAD /early HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let chunkedHead = "HEAD /chunked-head HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let lyingHead = "HEAD /lying-head HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let sequence: [(String, String, Bool)] = [
                (get, "kept", false), (early, "early", false), (get, "kept", false), (headEarly, "", true),
                (get, "kept", false), (chunkedHead, "", true), (get, "kept", false), (lyingHead, "", true),
                (get, "kept", false), (early, "early", false), (get, "kept", false),
            ]
            let port = h.proxyPort
            for pipelined in [false, true] {
                let responses = try await onOwnThread { () -> [Parsed] in
                    let socket = try RawSocket(port: port, receiveTimeout: 60)
                    if pipelined {
                        socket.send(sequence.map(\.0).joined())
                        return Self.read(socket, bodiless: sequence.map(\.2))
                    }
                    var responses: [Parsed] = []
                    for step in sequence {
                        socket.send(step.0)
                        responses += Self.read(socket, bodiless: [step.2])
                    }
                    return responses
                }
                #expect(responses.map(\.text) == sequence.map(\.1), "pipelined: \(pipelined), \(responses)")
                #expect(responses.allSatisfy { $0.status == 200 }, "pipelined: \(pipelined), \(responses)")
            }
        }
    }

    // MARK: - Clients

    @Test("a client that pipelines large kept hits and half-closes still gets every byte")
    func halfClosingClientGetsEverything() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/bytes/100000")
            let request = "GET /bytes/100000 HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(String(repeating: request, count: 30))
                shutdown(socket.descriptorForTests, Int32(SHUT_WR))
                return Self.read(socket, bodiless: Array(repeating: false, count: 30))
            }
            #expect(responses.count == 30)
            #expect(responses.allSatisfy { $0.body.count == 100_000 })
        }
    }

    @Test("a client that half-closes behind a slow request and kept hits gets every response, in order")
    func halfClosingBehindSlowRequest() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/k")
            let get = "GET /k HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let slow = "GET /slow HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(get + get + slow + get + get + slow + get)
                shutdown(socket.descriptorForTests, Int32(SHUT_WR))
                return Self.read(socket, bodiless: Array(repeating: false, count: 7))
            }
            #expect(
                responses.map(\.text) == [
                    "body of /k", "body of /k", "slow", "body of /k", "body of /k", "slow", "body of /k",
                ]
            )
        }
    }

    @Test("the status page counts every kept hit and its body bytes")
    func statusCountsKeptHits() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: Self.script) { h in
            _ = try await h.get("/bytes/20000")
            _ = try await h.get("/bytes/10")
            let port = h.proxyPort
            let count = try await onOwnThread { () -> Int in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                var count = 0
                for _ in 0..<10 {
                    socket.send(
                        "GET /bytes/20000 HTTP/1.1\r\nHost: proxy\r\n\r\nGET /bytes/10 HTTP/1.1\r\nHost: proxy\r\n\r\n"
                    )
                    count += Self.read(socket, bodiless: [false, false]).count
                }
                return count
            }
            #expect(count == 20)
            let status = try await h.status()
            #expect(status.requests.byOutcome.hit == 20, "\(status.requests)")
            #expect(status.bytesServed.fromCache == 10 * 20_010, "\(status.bytesServed)")
        }
    }
}

extension EncodedHitAttackTests {
    @Test("keepalive_timeout and client_header_timeout still close a connection whose last answer was kept bytes")
    func deadlinesAfterKeptHits() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.keepAliveTimeout = .seconds(1)
                $0.requestHeadTimeout = .seconds(1)
            },
            script: Self.script
        ) { h in
            _ = try await h.get("/k")
            let port = h.proxyPort
            let get = "GET /k HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let (idle, partial) = try await onOwnThread { () -> (Parsed?, Parsed?) in
                // Idle after two kept hits: closed by the idle deadline.
                let idleSocket = try RawSocket(port: port, receiveTimeout: 30)
                idleSocket.send(get + get)
                let idle = Self.read(idleSocket, bodiless: [false, false]).last
                let idleClose = idleSocket.readUntilClosed()
                #expect(idleClose.closed && idleClose.bytes == 0)
                // A head begun in the same write as a kept hit and never finished: closed by the
                // head deadline.
                let partialSocket = try RawSocket(port: port, receiveTimeout: 30)
                partialSocket.send(get + get + "GET /k HTTP/1.1\r\nHo")
                let partial = Self.read(partialSocket, bodiless: [false, false]).last
                let partialClose = partialSocket.readUntilClosed()
                #expect(partialClose.closed && partialClose.bytes == 0)
                return (idle, partial)
            }
            #expect(idle?.text == "body of /k")
            #expect(partial?.text == "body of /k")
        }
    }

    @Test("RFC 9110 §9.3.6: a CONNECT after kept hits gets no 2xx, since no tunnel opens, and ends the connection")
    func connectAmongKeptHits() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/k")
            let port = h.proxyPort
            let (answer, rest) = try await onOwnThread { () -> (Parsed?, (bytes: Int, closed: Bool)) in
                let socket = try RawSocket(port: port, receiveTimeout: 30)
                socket.send("GET /k HTTP/1.1\r\nHost: proxy\r\n\r\nGET /k HTTP/1.1\r\nHost: proxy\r\n\r\n")
                _ = Self.read(socket, bodiless: [false, false])
                socket.send("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
                let answer = Self.read(socket, bodiless: [false]).first
                return (answer, socket.readUntilClosed())
            }
            // Before: the origin's 200, framed as chunked with its last chunk, which a client
            // takes for the first bytes of the tunnel.
            #expect(answer?.status == 501, "\(String(describing: answer))")
            #expect(answer?.field("transfer-encoding") == nil)
            #expect(rest.closed && rest.bytes == 0, "\(rest)")
            #expect(h.origin.requests.allSatisfy { $0.method != .connect })
        }
    }
}

extension EncodedHitAttackTests {
    @Test(
        "what an odd origin stored is sent from kept bytes as the async path sends it",
        arguments: [
            "HTTP/1.1 200 OK\r\nConnection: close\r\nKeep-Alive: timeout=5\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=600\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nCache-Control: max-age=600\r\n\r\n4\r\nbody\r\n0\r\nX-T: 1\r\n\r\n",
            "HTTP/1.1 200 Fine Thanks\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 203 Non-Authoritative Information\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 299 Whatever\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 404 Not Found\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nX-Empty:\r\nX-Spaces:   a  b   \r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length:  4 \r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.0 200 OK\r\nCache-Control: max-age=600\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbodyEXTRA",
            "HTTP/1.1 204 No Content\r\nCache-Control: max-age=600\r\n\r\n",
            "HTTP/1.1 204 No Content\r\nCache-Control: max-age=600\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\nCache-Control: max-age=600\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 410 Gone\r\nCache-Control: max-age=600\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ]
    )
    func oddStoredResponsesOnBothPaths(stored: String) async throws {
        let upstream = try ScriptedUpstream { received in
            if received.path == "/slow" {
                return .sendPausing("", milliseconds: 300, then: ok("slow", "Cache-Control: no-store"))
            }
            return stored.hasPrefix("HTTP/1.0") || stored.contains("Connection: close") || stored.hasSuffix("EXTRA")
                ? .sendAndClose(stored) : .send(stored)
        }
        defer { upstream.stop() }
        try await ProxyHarness.run(upstream: upstream.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            // Stored through a raw socket: a client library would follow the redirect.
            _ = try await onOwnThread {
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send("GET /odd HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                return socket.readUntilClosed().bytes
            }
            let request = "GET /odd HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let (loop, async) = try await EventLoopHitAttackTests.bothPaths(request, port: h.proxyPort)
            #expect(
                EventLoopHitAttackTests.comparable(loop) == EventLoopHitAttackTests.comparable(async),
                "\(stored.debugDescription)"
            )
            #expect(loop?.field("connection") == nil, "\(String(describing: loop))")
        }
    }
}

extension EncodedHitAttackTests {
    @Test("connections on both loops hammering one URL while it is purged and refetched never go back to an older body")
    func hammeringThroughPurges() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: Self.script) { h in
            _ = try await h.get("/v/hot")
            let port = h.proxyPort
            let stop = StopFlag()
            let progress = ReaderProgress(readers: 6)
            let request = "GET /v/hot HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let readers = (0..<6).map { reader in
                Task {
                    try await onOwnThread { () -> [Int] in
                        let socket = try RawSocket(port: port, receiveTimeout: 60)
                        var versions: [Int] = []
                        while !stop.isSet.load(ordering: .relaxed) {
                            socket.send(request + request)
                            for response in Self.read(socket, bodiless: [false, false]) {
                                versions.append(Int(response.text.dropFirst()) ?? -1)
                            }
                            progress.count(reader)
                        }
                        return versions
                    }
                }
            }
            let url = h.origin.baseURL + "/v/hot"
            var last = ""
            for _ in 0..<10 {
                // Every connection reads between two purges (and after the last refetch).
                try await progress.waitForEveryReader()
                #expect(try await h.admin(.POST, "/purge?url=\(url)").status == 200)
                last = try await h.get("/v/hot").text
            }
            try await progress.waitForEveryReader()
            stop.isSet.store(true, ordering: .relaxed)
            let newest = Int(last.dropFirst()) ?? -1
            for reader in readers {
                let versions = try await reader.value
                #expect(!versions.isEmpty && !versions.contains(-1))
                // Never back to an older body once a newer one was served on the connection: a
                // miss fetched before a purge is not stored after the refetch that followed it.
                #expect(versions == versions.sorted(), "\(versions)")
                #expect((versions.last ?? 0) <= newest)
            }
            // And after the last refetch, every new request gets it.
            let after = try await onOwnThread { () -> [String] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(request + request)
                return Self.read(socket, bodiless: [false, false]).map(\.text)
            }
            #expect(after == [last, last])
        }
    }
}

extension EncodedHitAttackTests {
    @Test(
        "RFC 9110 §8.6: a HEAD of a length-less response states no Content-Length: 0, forwarded or stored, on either path",
        arguments: ["no-store", "max-age=600"]
    )
    func headOfLengthlessResponse(cacheControl: String) async throws {
        let upstream = try ScriptedUpstream { received in
            if received.path == "/slow" {
                return .sendPausing("", milliseconds: 300, then: ok("slow", "Cache-Control: no-store"))
            }
            let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: \(cacheControl)\r\n\r\n"
            return .send(head + (received.method == "HEAD" ? "" : "4\r\nbody\r\n0\r\n\r\n"))
        }
        defer { upstream.stop() }
        try await ProxyHarness.run(upstream: upstream.baseURL, script: { _ in .init() }) { h in
            _ = try await h.get("/lengthless")
            let head = "HEAD /lengthless HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let get = "GET /lengthless HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let port = h.proxyPort
            // On the event loop when stored, then behind /slow on the async path; each followed
            // by a GET on the same connection.
            let (loop, async) = try await onOwnThread { () -> ([Parsed], [Parsed]) in
                let loopSocket = try RawSocket(port: port, receiveTimeout: 60)
                loopSocket.send(head + get)
                let loop = Self.read(loopSocket, bodiless: [true, false])
                let asyncSocket = try RawSocket(port: port, receiveTimeout: 60)
                asyncSocket.send("GET /slow HTTP/1.1\r\nHost: proxy\r\n\r\n" + head + get)
                return (loop, Array(Self.read(asyncSocket, bodiless: [false, true, false]).dropFirst()))
            }
            // HTTP/1.0 has no chunked coding: the HEAD keeps the connection all the same.
            let old = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send("HEAD /lengthless HTTP/1.0\r\nHost: proxy\r\nConnection: keep-alive\r\n\r\n" + get)
                return Self.read(socket, bodiless: [true, false])
            }
            #expect(old.map(\.text) == ["", "body"], "\(old)")
            #expect(old.first?.field("transfer-encoding") == nil && old.first?.field("content-length") == nil)
            for (path, responses) in [("loop", loop), ("async", async)] {
                #expect(responses.map(\.text) == ["", "body"], "\(path): \(responses)")
                // The GET's content is 4 bytes: a HEAD must not say 0 (it may say nothing).
                let length = responses.first?.field("content-length")
                #expect(length == nil || length == "4", "\(path): \(responses)")
            }
            #expect(loop.first?.field("transfer-encoding") == async.first?.field("transfer-encoding"))
        }
    }
}

extension EncodedHitAttackTests {
    @Test(
        "requests differing only in a Vary field's case, order or repetition each get their own variant on both paths",
        arguments: [
            "Accept: a", "accept: a", "Accept: b", "Accept: a\r\nAccept: b", "Accept: b\r\nAccept: a",
            "Accept: a, b", "Accept: a\r\nX-Other: 1", "X-Other: 1\r\nAccept: a", "",
        ]
    )
    func varyingFieldsOnBothPaths(fields: String) async throws {
        let script: TestOriginServer.Script = { received in
            if received.head.path == "/slow" {
                return .init(fields: [("Cache-Control", "no-store")], body: "slow", delay: .milliseconds(300))
            }
            let accept = received.head.headerFields[values: .accept].joined(separator: "|")
            return .init(fields: [("Cache-Control", "max-age=600"), ("Vary", "Accept")], body: "accept=\(accept)")
        }
        try await ProxyHarness.run(script: script) { h in
            // Another variant first, so the records hold more than one.
            _ = try await h.get("/varied", headers: [("Accept", "z")])
            let request = "GET /varied HTTP/1.1\r\nHost: proxy\r\n" + (fields.isEmpty ? "" : fields + "\r\n") + "\r\n"
            let (loop, async) = try await EventLoopHitAttackTests.bothPaths(request, port: h.proxyPort)
            #expect(
                EventLoopHitAttackTests.comparable(loop) == EventLoopHitAttackTests.comparable(async),
                "\(request.debugDescription)"
            )
            #expect(loop?.text.hasPrefix("accept=") == true)
            #expect(loop?.text != "accept=z", "\(request.debugDescription)")
        }
    }
}

extension EncodedHitAttackTests {
    @Test(
        "a HEAD that freshens a stored GET with another Content-Length leaves the GET framed by its body, in memory or not"
    )
    func headFresheningKeepsFraming() async throws {
        let upstream = try ScriptedUpstream { received in
            if received.method == "HEAD" {
                return .send(
                    "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nETag: \"e\"\r\nCache-Control: max-age=600\r\n\r\n"
                )
            }
            return .send(ok("twelve bytes", "ETag: \"e\"", "Cache-Control: max-age=600"))
        }
        defer { upstream.stop() }
        for memory in [32_000_000, 20] {
            try await ProxyHarness.run(
                upstream: upstream.baseURL,
                configure: { $0.cache.memoryCapacity = ByteCount(Int64(memory)) },
                script: { _ in .init() }
            ) { h in
                let port = h.proxyPort
                let responses = try await onOwnThread { () -> [Parsed] in
                    let socket = try RawSocket(port: port, receiveTimeout: 60)
                    socket.send("GET /f HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    _ = Self.read(socket, bodiless: [false])
                    socket.send("HEAD /f HTTP/1.1\r\nHost: proxy\r\nCache-Control: no-cache\r\n\r\n")
                    _ = Self.read(socket, bodiless: [true])
                    socket.send("GET /f HTTP/1.1\r\nHost: proxy\r\n\r\nGET /f HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    return Self.read(socket, bodiless: [false, false])
                }
                #expect(responses.map(\.text) == ["twelve bytes", "twelve bytes"], "memory \(memory)")
                #expect(responses.allSatisfy { $0.field("content-length") == "12" }, "memory \(memory)")
            }
        }
    }
}

extension EncodedHitAttackTests {
    @Test("send_timeout: a slow steady reader of 800 pipelined 16 KiB kept hits gets all of them")
    func slowReaderOfManyKeptHits() async throws {
        try await ProxyHarness.run(configure: { $0.sendTimeout = .seconds(2) }, script: Self.script) { h in
            _ = try await h.get("/bytes/16384")
            let port = h.proxyPort
            let count = 800
            let (received, expected) = try await onOwnThread { () -> (Int, Int) in
                let socket = try RawSocket(port: port, receiveTimeout: 30, receiveBuffer: 65_536)
                socket.send(String(repeating: "GET /bytes/16384 HTTP/1.1\r\nHost: proxy\r\n\r\n", count: count))
                // The first response's size (a later one may be longer by Age's digits), then
                // about 4 MiB/s for the rest: over 3 s in all, longer than the send timeout.
                var buffer = [UInt8](repeating: 0, count: 65_536)
                var total = 0
                var responseSize = 0
                var data: [UInt8] = []
                while responseSize == 0 || total < responseSize * count {
                    RawSocket.pace(15_000)
                    let read = socket.receive(into: &buffer)
                    if read <= 0 { break }
                    total += read
                    if responseSize == 0 {
                        data += buffer[..<read]
                        if let end = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                            responseSize = end.upperBound + 16_384
                        }
                    }
                }
                return (total, responseSize * count)
            }
            #expect(expected > 0 && received >= expected, "\(received) of \(expected) bytes")
        }
    }
}

/// Tells the readers of a test to stop.
private final class StopFlag: Sendable {
    let isSet = Atomic<Bool>(false)
}

/// How many exchanges each reader connection has finished: the event a test waits for to know
/// every connection read since its last step.
private final class ReaderProgress: Sendable {
    private let exchanges: Mutex<[Int]>

    init(readers: Int) { exchanges = Mutex(Array(repeating: 0, count: readers)) }

    /// Reader `index` finished one more exchange.
    func count(_ index: Int) { exchanges.withLock { $0[index] += 1 } }

    /// Waits until every reader has finished an exchange since this call.
    func waitForEveryReader() async throws {
        let seen = exchanges.withLock { $0 }
        try await eventually { exchanges.withLock { zip($0, seen).allSatisfy { $0 > $1 } } }
    }
}

extension EncodedHitAttackTests {
    @Test("kept bytes do not outlive their second: Age grows, and Date is the one the async path sends")
    func keptFieldsMoveWithTime() async throws {
        // No Date from this origin: one is added (RFC 9110 §6.6.1).
        let upstream = try ScriptedUpstream { received in
            if received.path == "/slow" {
                return .sendPausing("", milliseconds: 300, then: ok("slow", "Cache-Control: no-store"))
            }
            return .send(ok("dated", "Cache-Control: max-age=600"))
        }
        defer { upstream.stop() }
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            upstream: upstream.baseURL,
            configure: { $0.cache.clock = clock.cacheClock },
            script: { _ in .init() }
        ) { h in
            _ = try await h.get("/dated")
            let port = h.proxyPort
            let get = "GET /dated HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let (early, late, async) = try await onOwnThread { () -> (Parsed?, Parsed?, Parsed?) in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(get + get)
                let early = Self.read(socket, bodiless: [false, false]).last
                clock.advance(by: .seconds(7))
                socket.send(get)
                let late = Self.read(socket, bodiless: [false]).first
                let asyncSocket = try RawSocket(port: port, receiveTimeout: 60)
                asyncSocket.send("GET /slow HTTP/1.1\r\nHost: proxy\r\n\r\n" + get)
                return (early, late, Self.read(asyncSocket, bodiless: [false, false]).last)
            }
            let earlyAge = try #require(early?.field("age").flatMap { Int($0) })
            let lateAge = try #require(late?.field("age").flatMap { Int($0) })
            #expect(lateAge == earlyAge + 7, "Age \(earlyAge) then \(lateAge)")
            #expect(async?.field("age") == late?.field("age"))
            #expect(late?.field("date") == async?.field("date"))
            #expect(late?.text == "dated" && async?.text == "dated")
        }
    }
}
