import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import StowageTesting
import Synchronization
import Testing

@testable import StowageProxy

#if canImport(Glibc)
import Glibc
#endif

/// Attacks on hits answered on the event loop (`MemoryHitHandler`, `LoopHitResponder`,
/// `EncodedHits`): what a client sees must not depend on which path answered it, and the
/// connection's bounds must hold on both.
@Suite struct EventLoopHitAttackTests {
    /// A response read off a raw socket, framed by its status, `Content-Length` or chunks.
    struct Parsed: CustomStringConvertible {
        var head: String
        var body: [UInt8]
        var status: Int { Int(head.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0 }
        var text: String { String(decoding: body, as: UTF8.self) }
        var fields: [(name: String, value: String)] {
            head.split(separator: "\r\n").dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (
                    String(line[..<colon]).lowercased(),
                    String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                )
            }
        }
        func field(_ name: String) -> String? { fields.first { $0.name == name.lowercased() }?.value }
        var description: String { head.replacingOccurrences(of: "\r\n", with: " | ") + " || " + text }
    }

    /// Reads `bodiless.count` final responses (1xx skipped); `bodiless[i]` for a response to
    /// `HEAD`. Fewer when the peer closes or the socket times out first.
    static func read(_ socket: RawSocket, bodiless: [Bool]) -> [Parsed] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var responses: [Parsed] = []
        var closed = false
        func more() -> Bool {
            if closed { return false }
            let count = socket.receive(into: &buffer)
            if count <= 0 {
                closed = true
                return false
            }
            data += buffer[..<count]
            return true
        }
        let crlf2 = Array("\r\n\r\n".utf8)
        while responses.count < bodiless.count {
            guard let end = data.firstRange(of: crlf2) else {
                if more() { continue } else { return responses }
            }
            let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
            var response = Parsed(head: head, body: [])
            if (100..<200).contains(response.status) {
                data.removeSubrange(..<end.upperBound)
                continue
            }
            var cursor = end.upperBound
            let noBody = bodiless[responses.count] || response.status == 204 || response.status == 304
            if noBody {
            } else if response.field("transfer-encoding")?.lowercased().contains("chunked") == true {
                var body: [UInt8] = []
                while true {
                    guard let lineEnd = data[cursor...].firstRange(of: Array("\r\n".utf8)) else {
                        if more() { continue } else { return responses }
                    }
                    let sizeText = String(decoding: data[cursor..<lineEnd.lowerBound], as: UTF8.self)
                    let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) ?? 0
                    let chunkStart = lineEnd.upperBound
                    while data.count < chunkStart + size + 2 { if !more() { return responses } }
                    if size == 0 {
                        // Trailers: assume none.
                        cursor = chunkStart + 2
                        break
                    }
                    body += data[chunkStart..<chunkStart + size]
                    cursor = chunkStart + size + 2
                }
                response.body = body
            } else if let length = response.field("content-length").flatMap({ Int($0) }) {
                while data.count < cursor + length { if !more() { return responses } }
                response.body = Array(data[cursor..<cursor + length])
                cursor += length
            } else {
                while more() {}
                response.body = Array(data[cursor...])
                cursor = data.count
            }
            data.removeSubrange(..<cursor)
            responses.append(response)
        }
        return responses
    }

    /// Every cacheable path says its path; `/slow` is uncacheable and slow; `/miss…` is
    /// uncacheable; a POST echoes its body.
    static let script: TestOriginServer.Script = { received in
        let path = received.head.path ?? "/"
        if received.head.method == .post {
            return .init(fields: [("Cache-Control", "no-store")], bytes: Array("posted:".utf8) + received.body)
        }
        if path == "/slow" {
            return .init(fields: [("Cache-Control", "no-store")], body: "slow", delay: .milliseconds(300))
        }
        if path.hasPrefix("/miss") {
            return .init(fields: [("Cache-Control", "no-store")], body: "miss \(path)")
        }
        return .init(
            fields: [
                ("Cache-Control", "max-age=600"), ("ETag", "\"e\""),
                ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ],
            body: "body of \(path)"
        )
    }

    // MARK: - Pipelining

    @Test("RFC 9112 §9.3.2: 60 mixed hits, misses, HEADs, conditionals and POSTs in one write come back in order")
    func mixedPipelineKeepsOrderAndFraming() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            for index in 0..<10 { _ = try await h.get("/h\(index)") }
            var requests: [String] = []
            var expected: [(status: Int, body: String, head: Bool)] = []
            for round in 0..<60 {
                let index = round % 10
                switch round % 6 {
                case 0, 3:
                    requests.append("GET /h\(index) HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    expected.append((200, "body of /h\(index)", false))
                case 1:
                    requests.append("GET /miss\(round) HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    expected.append((200, "miss /miss\(round)", false))
                case 2:
                    requests.append("HEAD /h\(index) HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    expected.append((200, "", true))
                case 4:
                    requests.append("GET /h\(index) HTTP/1.1\r\nHost: proxy\r\nIf-None-Match: \"e\"\r\n\r\n")
                    expected.append((304, "", false))
                default:
                    let body = "p\(round)"
                    requests.append(
                        "POST /post HTTP/1.1\r\nHost: proxy\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                    )
                    expected.append((200, "posted:\(body)", false))
                }
            }
            let port = h.proxyPort
            let bodiless = expected.map(\.head)
            let text = requests.joined()
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(text)
                let responses = Self.read(socket, bodiless: bodiless)
                return responses
            }
            #expect(responses.count == expected.count)
            for (index, (response, wanted)) in zip(responses, expected).enumerated() {
                #expect(response.status == wanted.status, "#\(index): \(response)")
                #expect(response.text == wanted.body, "#\(index): \(response)")
            }
        }
    }

    @Test("RFC 9112 §9.3.2: a client that pipelines hits in many small writes still gets each once, in order")
    func pipelineSplitAcrossWrites() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            for index in 0..<5 { _ = try await h.get("/s\(index)") }
            let port = h.proxyPort
            let requests = (0..<40).map { i in
                i % 7 == 3
                    ? "GET /slow HTTP/1.1\r\nHost: proxy\r\n\r\n" : "GET /s\(i % 5) HTTP/1.1\r\nHost: proxy\r\n\r\n"
            }
            let expected = (0..<40).map { i in i % 7 == 3 ? "slow" : "body of /s\(i % 5)" }
            let bytes = Array(requests.joined().utf8)
            let count = requests.count
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                // 13-byte pieces: heads split anywhere, several heads in one piece.
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + 13, bytes.count)
                    socket.trySend(Array(bytes[offset..<end]))
                    offset = end
                    RawSocket.pace(200)
                }
                return Self.read(socket, bodiless: Array(repeating: false, count: count))
            }
            #expect(responses.map(\.text) == expected)
        }
    }

    @Test("a GET after a HEAD on a connection that had a hit from kept bytes still gets its body (no desync)")
    func bodyAfterHeadFollowingKeptHit() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/h")
            let port = h.proxyPort
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 120)
                var responses: [Parsed] = []
                // One request at a time, no pipelining: a hit (kept bytes), a HEAD and a GET
                // that both go to the async path.
                for (request, isHead) in [
                    ("GET /h HTTP/1.1\r\nHost: proxy\r\n\r\n", false),
                    ("HEAD /miss-a HTTP/1.1\r\nHost: proxy\r\n\r\n", true),
                    ("GET /miss-b HTTP/1.1\r\nHost: proxy\r\n\r\n", false),
                ] {
                    socket.send(request)
                    responses += Self.read(socket, bodiless: [isHead])
                }
                return responses
            }
            #expect(responses.map(\.text) == ["body of /h", "", "miss /miss-b"], "\(responses)")
        }
    }

    // MARK: - The same answer on both paths

    /// Sends `request` twice on one connection (the second from the kept bytes when it can be),
    /// and once behind `/slow` (the async path); the last answer of each.
    static func bothPaths(
        _ request: String,
        port: Int,
        isHead: Bool = false
    ) async throws -> (
        loop: Parsed?, async: Parsed?
    ) {
        try await onOwnThread {
            let loopSocket = try RawSocket(port: port, receiveTimeout: 60)
            loopSocket.send(request)
            var loop = Self.read(loopSocket, bodiless: [isHead]).first
            loopSocket.send(request)
            if let second = Self.read(loopSocket, bodiless: [isHead]).first { loop = second }
            let asyncSocket = try RawSocket(port: port, receiveTimeout: 60)
            asyncSocket.send("GET /slow HTTP/1.1\r\nHost: proxy\r\n\r\n" + request)
            let both = Self.read(asyncSocket, bodiless: [false, isHead])
            return (loop, both.count == 2 ? both[1] : nil)
        }
    }

    /// What must agree between the two paths: status line, body, and every field but `Date`
    /// and `Age`, with `Cache-Status`'s `ttl` dropped.
    static func comparable(_ response: Parsed?) -> String {
        guard let response else { return "(no response)" }
        let statusLine = response.head.split(separator: "\r\n").first.map(String.init) ?? ""
        let fields = response.fields.filter { $0.name != "date" && $0.name != "age" }.map { field in
            var value = field.value
            if field.name == "cache-status" {
                value = value.replacingOccurrences(of: #";\s*ttl=-?\d+"#, with: "", options: .regularExpression)
            }
            return field.name + ": " + value
        }.sorted()
        return ([statusLine] + fields + [response.text]).joined(separator: "\n")
    }

    @Test(
        "a hit from the event loop (and from its kept bytes) is the response the async path gives the same request",
        arguments: [
            "Host: proxy",
            "Host: proxy\r\nHost: other",
            "",
            "Host: PROXY",
            "Host: proxy:80",
            "host: proxy",
            "Host: proxy\r\nCache-Control: max-age=0",
            "Host: proxy\r\nCache-Control: only-if-cached",
            "Host: proxy\r\nCache-Control: no-store",
            "Host: proxy\r\nCache-Control: max-stale=10, min-fresh=1",
            "Host: proxy\r\nCache-Control: min-fresh=100000",
            "Host: proxy\r\nPragma: no-cache",
            "Host: proxy\r\nIf-None-Match: *",
            "Host: proxy\r\nIf-None-Match: \"other\"",
            "Host: proxy\r\nIf-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT",
            "Host: proxy\r\nIf-Match: \"nope\"",
            "Host: proxy\r\nIf-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT",
            "Host: proxy\r\nRange: bytes=0-3",
            "Host: proxy\r\nRange: bytes=0-3\r\nIf-Range: \"e\"",
            "Host: proxy\r\nRange: bytes=0-3\r\nIf-Range: \"x\"",
            "Host: proxy\r\nRange: bytes=999-",
            "Host: proxy\r\nAccept-Encoding: gzip",
            "Host: proxy\r\nAuthorization: Bearer secret",
            "Host: proxy\r\nCookie: a=b",
            "Host: proxy\r\nConnection: close",
            "Host: proxy\r\nConnection: keep-alive, x-drop\r\nX-Drop: 1",
            "Host: proxy\r\nMax-Forwards: 0",
            "Host: proxy\r\nTE: trailers",
            "Host: proxy\r\nVia: 1.1 loop",
            "Host: proxy\r\nX-Forwarded-For: 10.0.0.1",
        ]
    )
    func samAnswerOnBothPaths(fields: String) async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/same")
            let request = "GET /same HTTP/1.1\r\n" + fields + (fields.isEmpty ? "" : "\r\n") + "\r\n"
            let (loop, async) = try await Self.bothPaths(request, port: h.proxyPort)
            #expect(Self.comparable(loop) == Self.comparable(async), "\(request.debugDescription)")
        }
    }

    @Test(
        "odd request lines get the same answer from the event loop as from the async path",
        arguments: [
            "GET http://proxy/same HTTP/1.1\r\nHost: proxy",
            "GET http://elsewhere.example/same HTTP/1.1\r\nHost: proxy",
            "GET //same HTTP/1.1\r\nHost: proxy",
            "GET /same? HTTP/1.1\r\nHost: proxy",
            "GET /same#frag HTTP/1.1\r\nHost: proxy",
            "GET /%73ame HTTP/1.1\r\nHost: proxy",
            "GET /./same HTTP/1.1\r\nHost: proxy",
            "GET /x/../same HTTP/1.1\r\nHost: proxy",
            "GET /same HTTP/1.0\r\nHost: proxy\r\nConnection: keep-alive",
            "HEAD /same HTTP/1.0\r\nHost: proxy\r\nConnection: keep-alive",
        ]
    )
    func oddRequestLinesOnBothPaths(line: String) async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/same")
            let request = line + "\r\n\r\n"
            let (loop, async) = try await Self.bothPaths(request, port: h.proxyPort, isHead: line.hasPrefix("HEAD"))
            #expect(Self.comparable(loop) == Self.comparable(async), "\(request.debugDescription)")
        }
    }

    // MARK: - Bounds

    @Test("4,000 hits whose requests carry 48 KiB fields each are all answered (such requests are not kept as bytes)")
    func keptHitsBoundCountsRequestFields() async throws {
        try await ProxyHarness.run(script: Self.script) { h in
            _ = try await h.get("/small")
            let port = h.proxyPort
            // 4,000 distinct requests of ~48 KiB of fields each for a 14-byte hit: ~190 MiB of
            // fields, over EncodedHits.maximumRequestFieldBytes each, so none is kept (the bound
            // itself is EncodedHitsTests'; resident memory is too noisy beside other suites).
            let pad = String(repeating: "a", count: 48 << 10)
            let answered = try await onOwnThread { () -> Int in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                var answered = 0
                for batch in 0..<40 {
                    var text = ""
                    for index in 0..<100 {
                        text += "GET /small HTTP/1.1\r\nHost: proxy\r\nX-Pad: \(pad)\(batch * 100 + index)\r\n\r\n"
                    }
                    socket.send(text)
                    answered +=
                        Self.read(socket, bodiless: Array(repeating: false, count: 100)).filter {
                            $0.text == "body of /small"
                        }.count
                }
                return answered
            }
            #expect(answered == 4_000)
        }
    }

    // MARK: - Send deadline

    @Test(
        "send_timeout: a client that keeps pipelining hits and never reads is cut once the send timeout passes",
        .timeLimit(.minutes(5))
    )
    func pipelinerThatNeverReadsIsCut() async throws {
        let size = 256 << 10
        // Every deadline runs on a clock the client moves, and only the send timeout is short: a
        // cut before the clock has moved ten minutes is the send timeout's, however slowly a
        // loaded machine runs (the time limit catches a hang).
        let clock = SteppedClock()
        try await ProxyHarness.run(
            configure: {
                $0.timeoutClock = clock
                $0.sendTimeout = .seconds(2)
                $0.keepAliveTimeout = .seconds(3_600)
                $0.requestHeadTimeout = .seconds(3_600)
            },
            script: { _ in .init(fields: [("Cache-Control", "max-age=600")], body: String(repeating: "z", count: size))
            }
        ) { h in
            _ = try await h.get("/big")
            let port = h.proxyPort
            let (cut, sent, stepped) = try await onOwnThread { () -> (Bool, Int, Duration) in
                let socket = try RawSocket(port: port, receiveTimeout: 30, receiveBuffer: 4_096)
                var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
                setsockopt(
                    socket.descriptorForTests,
                    SOL_SOCKET,
                    SO_SNDTIMEO,
                    &timeout,
                    socklen_t(MemoryLayout<timeval>.size)
                )
                let request = Array("GET /big HTTP/1.1\r\nHost: proxy\r\n\r\n".utf8)
                var sent = 0
                var stepped = Duration.zero
                // Keeps asking and never reads. Whenever the kernel takes nothing for 200 ms (the
                // answers fill both socket buffers, so the proxy cannot write), the clock moves
                // a second.
                while stepped < .seconds(600) {
                    let result = socket.trySend(request)
                    if result < 0, errno == EPIPE || errno == ECONNRESET { return (true, sent, stepped) }
                    if result > 0 {
                        sent += 1
                    } else {
                        clock.advance(by: .seconds(1))
                        stepped += .seconds(1)
                    }
                }
                return (false, sent, stepped)
            }
            #expect(cut, "still connected after the clock moved \(stepped); \(sent) requests sent, none read")
            #expect(stepped >= .seconds(2), "cut after \(stepped) on the clock, before the 2 s send timeout")
        }
    }

    @Test("send_timeout: a slow steady reader of a 16 MiB hit held in memory gets all of it")
    func slowSteadyReaderOfLargeHit() async throws {
        let size = 16 << 20
        try await ProxyHarness.run(
            configure: {
                $0.sendTimeout = .seconds(2)
                $0.cache.memoryCapacity = ByteCount(64 << 20)
            },
            script: { _ in .init(fields: [("Cache-Control", "max-age=600")], body: String(repeating: "q", count: size))
            }
        ) { h in
            #expect(try await h.get("/huge").body.count == size)
            let port = h.proxyPort
            let received = try await onOwnThread { () -> Int in
                let socket = try RawSocket(port: port, receiveTimeout: 30, receiveBuffer: 65_536)
                socket.send("GET /huge HTTP/1.1\r\nHost: proxy\r\n\r\n")
                // ~4 MiB/s: four seconds for the body, twice the send timeout.
                var total = 0
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while total < size + 100 {
                    RawSocket.pace(15_000)
                    let count = socket.receive(into: &buffer)
                    if count <= 0 { break }
                    total += count
                }
                return total
            }
            #expect(received > size, "\(received) of \(size) body bytes")
        }
    }

    // MARK: - Upstream retry

    @Test("an upstream that closes every connection unanswered is a prompt 502 after at most one retry")
    func upstreamThatAlwaysCloses() async throws {
        let closer = try EarlyAnsweringOrigin(.closeEveryUnanswered)
        defer { closer.stop() }
        // An hour's upstream timeout: a 502 that comes at all came from the closed connections,
        // not from waiting the timeout out, however slowly a loaded machine runs the proxy.
        try await ProxyHarness.run(upstreamTimeout: .seconds(3_600), upstream: closer.baseURL, script: { _ in .init() })
        {
            h in
            let reply = try await h.get("/any")
            #expect(reply.status == 502)
            #expect(closer.requestCount <= 2, "\(closer.requestCount) request heads for one GET")
            let post = try await h.get("/any", method: .POST, body: Array("x".utf8))
            #expect(post.status == 502)
            #expect(closer.requestCount <= 3, "a POST is not sent twice: \(closer.requestCount) heads in all")
        }
    }

    @Test("a POST whose connection closes before any answer is not sent again")
    func postIsNotRetried() async throws {
        let origin = try EarlyAnsweringOrigin(.closeFirstUnanswered)
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let reply = try await h.get("/p", method: .POST, body: Array("once".utf8))
            #expect(reply.status == 502)
            #expect(origin.requestCount == 1)
        }
    }
}
