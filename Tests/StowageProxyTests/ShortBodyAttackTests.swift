import Foundation
import NIOHTTP1
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import StowageTesting
import Testing

/// Attacks on the short-body read of the miss path (c6e20bb: a body whose `Content-Length` is at
/// most `UpstreamClient.Configuration.wholeBodyLimit`, 64 KiB, is read whole on the upstream
/// connection's event loop before the response is handed over): its bound, framing that lies
/// about it, a client that leaves while it is read, a purge while it is read, many at once.
/// (`HostileUpstreamTests` has a short body cut and stalled, `LyingUpstreamTests` more framing.)
@Suite struct ShortBodyAttackTests {
    /// `count` bytes, `a` to `z` over and over.
    static func body(_ count: Int) -> String {
        String(decoding: (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }, as: UTF8.self)
    }

    @Test(
        "bodies at and around the 64 KiB bound (read whole or streamed) arrive whole, are stored, and the connection is reused",
        arguments: [0, 1, 65_535, 65_536, 65_537, 200_000]
    )
    func bodiesAroundTheBound(count: Int) async throws {
        let expected = Self.body(count)
        let origin = try ScriptedUpstream { _ in .send(ok(expected, "Cache-Control: max-age=600")) }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let first = try await h.get("/a")
            #expect(first.status == 200 && first.text == expected, "\(first.status) \(first.text.count) bytes")
            let second = try await h.get("/a")
            #expect(second.text == expected && second.cacheStatus.contains("hit"), "\(second.cacheStatus)")
            let other = try await h.get("/b")
            #expect(other.text == expected)
            #expect(origin.requestCount == 2)
            #expect(origin.connectionCount == 1, "each response ended where its length said")
        }
    }

    /// `answer` with `Cache-Control: max-age=600` at the end of its head.
    static func cacheable(_ answer: String) -> String {
        guard let end = answer.range(of: "\r\n\r\n") else { return answer }
        return answer.replacingCharacters(in: end, with: "\r\nCache-Control: max-age=600\r\n\r\n")
    }

    @Test(
        "a short body whose framing lies or is refused: the client gets it as framed or a 502, the next requests their own",
        arguments: [
            ("more bytes than the length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234567890123456789"),
            (
                "a whole response after the length",
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"
                    + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=600\r\n\r\nEVIL"
            ),
            ("the length twice", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 10\r\n\r\n0123456789"),
            ("a length with a sign", "HTTP/1.1 200 OK\r\nContent-Length: +10\r\n\r\n0123456789"),
            ("a length in hexadecimal", "HTTP/1.1 200 OK\r\nContent-Length: 0x0a\r\n\r\n0123456789"),
            ("a length past 64 bits", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n0123456789"),
            (
                "a length with Transfer-Encoding: identity",
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: identity\r\n\r\n0123456789"
            ),
            ("a 304 with a length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"),
            ("a 204 with a length", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"),
        ]
    )
    func lyingShortBody(_ name: String, _ answer: String) async throws {
        let origin = try ScriptedUpstream { received in
            // Stored when it is taken as framed: the second request is then a hit, not a second lie.
            received.path == "/bad"
                ? .send(Self.cacheable(answer)) : .send(ok("fine\(received.index)", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            for round in 1...2 {
                let bad = try await h.get("/bad")
                #expect([200, 204, 304, 502].contains(bad.status), "\(name) round \(round): \(bad.status)")
                if bad.status != 502 {
                    #expect(["", "0123456789"].contains(bad.text), "\(name) round \(round): \(bad.text)")
                }
                for _ in 1...2 {
                    let next = try await h.get("/good")
                    #expect(next.status == 200 && next.text.hasPrefix("fine"), "\(name): \(next.status) \(next.text)")
                }
            }
        }
    }

    /// A second response that begins right after the first one's length, cut in its head: the
    /// parser keeps what it has of it for the next response on the connection.
    static let cutHead = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=600\r\n"

    @Test(
        "bytes after a response's end that begin another response: the connection is not reused, so no other request gets them",
        arguments: [
            ("a short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nCache-Control: no-store\r\n\r\n0123456789"),
            ("a body past the 64 KiB bound", ok(Self.body(70_000), "Cache-Control: no-store")),
            ("a 204", "HTTP/1.1 204 No Content\r\nCache-Control: no-store\r\n\r\n"),
            ("an empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: no-store\r\n\r\n"),
            (
                "a chunked body",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: no-store\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            ),
        ]
    )
    func bytesAfterTheEnd(_ name: String, _ answer: String) async throws {
        let origin = try ScriptedUpstream { received in
            // On the connection that carried /bad, this answer would follow the cut head: a
            // malformed head (a 502), or, had the origin sent the cut head's end, EVIL.
            received.path == "/bad" ? .send(answer + Self.cutHead) : .send(ok("fine", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let bad = try await h.get("/bad")
            #expect([200, 204].contains(bad.status), "\(name): \(bad.status)")
            for _ in 1...2 {
                let next = try await h.get("/good")
                #expect(next.status == 200 && next.text == "fine", "\(name): \(next.status) \(next.text)")
            }
            #expect(origin.connectionCount == 2, "\(name): the connection /bad came on was not reused")
        }
    }

    @Test(
        "a head whose end is split between two reads, then bytes after the response's end: the connection is not reused",
        arguments: [
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r\n", "\r\nok"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r\n\r", "\nok"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r", "\n\r\nok"),
        ]
    )
    func bytesAfterAHeadSplitAtItsEnd(_ first: String, _ rest: String) async throws {
        let origin = try ScriptedUpstream { received in
            // The pause puts the two parts in two reads of the proxy's.
            received.path == "/bad"
                ? .sendPausing(first, milliseconds: 100, then: rest + Self.cutHead)
                : .send(ok("fine", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let bad = try await h.get("/bad")
            #expect(bad.status == 200 && bad.text == "ok", "\(bad.status) \(bad.text)")
            for _ in 1...2 {
                let next = try await h.get("/good")
                #expect(next.status == 200 && next.text == "fine", "\(next.status) \(next.text)")
            }
            #expect(origin.connectionCount == 2, "the connection /bad came on was not reused")
        }
    }

    @Test(
        "a cacheable body cut by the close, read whole or streamed, is stored nowhere: not in memory, the index or a file",
        arguments: [1_000, 200_000]
    )
    func cutBodyIsStoredNowhere(declared: Int) async throws {
        let origin = try ScriptedUpstream { received in
            guard received.path == "/cut" else { return .send(ok("fine", "Cache-Control: no-store")) }
            return .sendAndClose(
                "HTTP/1.1 200 OK\r\nContent-Length: \(declared)\r\nCache-Control: max-age=600\r\n\r\n"
                    + Self.body(declared / 2)
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            for _ in 1...2 {
                let outcome = try await RawSocket.exchange("GET /cut HTTP/1.1\r\nHost: proxy\r\n\r\n", port: port)
                // A short body is refused whole (a 502); a streamed one is cut mid-way (nil).
                #expect(outcome == nil || outcome?.head.hasPrefix("HTTP/1.1 502") == true, "\(outcome?.head ?? "")")
            }
            #expect(origin.requestCount == 2, "the cut response was not served from the cache")
            #expect(try await h.get("/good").text == "fine")
            let cache = try #require(h.cache)
            let disk = try #require(cache.disk)
            try await disk.flush()
            #expect(try await disk.usage().count == 0, "nothing in the index")
            let temporary = disk.directory.appending(path: "tmp")
            // A streamed write that failed removes its file once its task ends.
            try await eventually { try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty }
            let data = disk.directory.appending(path: "data")
            let files = FileManager.default.enumerator(atPath: data.path)?.allObjects.compactMap { $0 as? String } ?? []
            #expect(files.allSatisfy { !$0.contains("-") }, "no value file: \(files)")
        }
    }

    @Test(
        "chunked responses that end where the read ends keep their connection, trailers or not, whatever their chunks",
        arguments: [
            "5\r\nhello\r\n0\r\n\r\n",
            "5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n",
            "2\r\n\r\n\r\n3\r\n\n\n\n\r\n0\r\n\r\n",
        ]
    )
    func chunkedResponsesKeepTheirConnection(_ chunks: String) async throws {
        let origin = try ScriptedUpstream { _ in
            .send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: no-store\r\n\r\n" + chunks)
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            for _ in 1...3 {
                let reply = try await h.get("/chunked")
                #expect(reply.status == 200 && !reply.body.isEmpty, "\(reply.status)")
            }
            #expect(origin.connectionCount == 1, "\(origin.connectionCount) connections for 3 requests")
        }
    }

    @Test("a client that leaves while a short body is read: the body is read to its end, stored, and served whole")
    func clientLeavesWhileBodyIsRead() async throws {
        let release = ScriptedUpstream.Release()
        defer { release.open() }
        let full = Self.body(30_000)
        let head = "HTTP/1.1 200 OK\r\nContent-Length: \(full.utf8.count)\r\nCache-Control: max-age=600\r\n\r\n"
        let origin = try ScriptedUpstream { received in
            if received.path != "/held" { return .send(ok("fine", "Cache-Control: no-store")) }
            if received.index > 1 { return .send(head + full) }
            return .sendHolding(head + full.prefix(100), until: release, then: String(full.dropFirst(100)))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let port = h.proxyPort
            // The client sends its request and closes at once.
            try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("GET /held HTTP/1.1\r\nHost: proxy\r\n\r\n")
            }
            try await eventually { origin.requestCount == 1 }
            release.open()
            let again = try await h.get("/held")
            #expect(again.status == 200 && again.text == full, "\(again.status) \(again.text.count) bytes")
            let next = try await h.get("/good")
            #expect(next.text == "fine")
        }
    }

    @Test("a purge while a short body is read is final: the refetch and every later request get the new body")
    func purgeWhileBodyIsRead() async throws {
        let release = ScriptedUpstream.Release()
        defer { release.open() }
        let old = String(repeating: "o", count: 30_000)
        let head = "HTTP/1.1 200 OK\r\nContent-Length: \(old.utf8.count)\r\nCache-Control: max-age=600\r\n\r\n"
        let origin = try ScriptedUpstream { received in
            if received.index == 1 {
                return .sendHolding(head + old.prefix(10_000), until: release, then: String(old.dropFirst(10_000)))
            }
            return .send(ok("new\(received.index)", "Cache-Control: max-age=600"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(
            upstream: origin.baseURL,
            configure: {
                $0.admin = .init(port: 0)
                // Only a hang-catcher: a refetch that joined the held fetch would wait this long.
                $0.cache.collapseTimeout = .seconds(5)
            },
            script: { _ in .init() }
        ) { h in
            let first = Task { try await h.get("/race") }
            try await eventually { origin.requestCount == 1 }
            // 404: nothing is stored yet, the fetch is under way.
            #expect([200, 404].contains(try await h.admin(.POST, "/purge?url=\(origin.baseURL)/race").status))
            let refetched = try await h.get("/race")
            #expect(refetched.text == "new2", "\(refetched.text.prefix(10))")
            release.open()
            let held = try await first.value
            #expect(held.status == 200 && held.text == old, "the request made before the purge gets its answer")
            for _ in 1...2 {
                let after = try await h.get("/race")
                #expect(after.text == "new2", "\(after.text.prefix(10)) \(after.cacheStatus)")
            }
        }
    }

    @Test("200 short bodies of 64 KiB read at once: each client gets its own, whole")
    func manyShortBodiesAtOnce() async throws {
        let origin = try ScriptedUpstream { received in
            // Each body names its path, so one given to another request would show.
            let prefix = received.path + ";"
            let body = prefix + Self.body(65_536 - prefix.utf8.count)
            return .send(ok(body, "Cache-Control: max-age=600"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let wrong = try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let path = "/c/\(index)"
                        let reply = try await h.get(path)
                        let prefix = path + ";"
                        let expected = prefix + Self.body(65_536 - prefix.utf8.count)
                        return reply.status == 200 && reply.text == expected ? nil : "\(path): \(reply.status)"
                    }
                }
                var wrong: [String] = []
                for try await failure in group { if let failure { wrong.append(failure) } }
                return wrong
            }
            #expect(wrong.isEmpty, "\(wrong.prefix(5))")
            #expect(origin.requestCount == 200)
        }
    }
}
