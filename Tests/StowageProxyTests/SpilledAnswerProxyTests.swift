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

/// Answers worked out from disk reads, spilled to the anonymous answers file and sent again from
/// it (`HTTPCache+SpilledAnswers.swift`): the bytes a client gets are those of the disk hit they
/// replace, and each of the cache's promises holds for them — a purge, a replacement, another
/// handle's removal and a clear are final; the spill's place in memory is charged to the
/// capacity; bytes garbled in the file are a miss of the spill, never a wrong answer.
@Suite("Spilled answers", .timeLimit(.minutes(10)))
struct SpilledAnswerProxyTests {
    /// Room for a few spilled answers' places (about 300 bytes each) and one response's records
    /// and body, so the responses of earlier URLs are only on disk.
    static let memoryCapacity = ByteCount(3_000)

    /// Warms `/u/0` … `/u/(count-1)` (misses), then asks for `paths` twice: the first time read
    /// from the disk index and spilled, the second time from the spill.
    static func warm(_ h: ProxyHarness, count: Int = 12) async throws {
        for n in 0..<count { _ = try await h.get("/u/\(n)") }
    }

    static let paths = ["/u/0", "/u/1", "/u/2"]

    /// `/u/N` says its path and the origin's request number; `/lang` varies on
    /// `Accept-Language` and says it; all fresh for an hour.
    static let script: TestOriginServer.Script = { received in
        let path = received.head.path ?? "/"
        if path == "/lang" {
            let language = received.head.headerFields[HTTPField.Name("Accept-Language")!] ?? "none"
            return .init(
                fields: [("Cache-Control", "max-age=3600"), ("Vary", "Accept-Language")],
                body: "\(path) in \(language) #\(received.index)"
            )
        }
        return .init(fields: [("Cache-Control", "max-age=3600")], body: "\(path) #\(received.index)")
    }

    @Test("a response that varies: each spilled answer goes to requests with its own value of the varying field")
    func varyingResponsesKeepTheirOwnAnswers() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            let english = try await h.get("/lang", headers: [("Accept-Language", "en")]).text
            let german = try await h.get("/lang", headers: [("Accept-Language", "de")]).text
            try await Self.warm(h)
            let none = try await h.get("/lang").text
            #expect(none.hasPrefix("/lang in none"), "\(none)")
            try await Self.warm(h)
            // One spilled answer per target and Host: the variant asked for last. Asked for in
            // turn, each variant gets its own; asked for again, from the spill.
            let before = try Self.spilledHits(h)
            for round in 0..<2 {
                for (language, expected) in [("en", english), ("de", german), (nil, none)] {
                    for _ in 0..<3 {
                        let headers = language.map { [("Accept-Language", $0)] } ?? []
                        let reply = try await h.get("/lang", headers: headers)
                        #expect(reply.text == expected, "round \(round), \(language ?? "none"): \(reply.text)")
                    }
                }
            }
            #expect(try Self.spilledHits(h) >= before + 12, "the second and third of each three from the spill")
            #expect(h.origin.requestCount == 3 + 12)
        }
    }

    @Test(
        "clients sending other fields share one spilled answer: a raw request with only Host gets the bytes spilled for another client"
    )
    func otherFieldsShareTheSpill() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            try await Self.warm(h)
            let expected = try await h.get("/u/3").text
            _ = try await h.get("/u/3")
            let before = try Self.spilledHits(h)
            let port = h.proxyPort
            let request = "GET /u/3 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: raw\r\nAccept: */*\r\n\r\n"
            let responses = try await onOwnThread { () -> [EventLoopHitAttackTests.Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(request + request)
                return EventLoopHitAttackTests.read(socket, bodiless: [false, false])
            }
            #expect(responses.map(\.text) == [expected, expected])
            #expect(try Self.spilledHits(h) == before + 2, "both from the spill")
        }
    }

    static func spilledHits(_ h: ProxyHarness) throws -> Int {
        try #require(h.cache).spilledAnswerFigures.hits
    }

    @Test(
        "a hit read from disk is spilled and sent again from the spill: the same body and fields, Age and Cache-Status of now"
    )
    func spilledHitsMatchDiskHits() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            try await Self.warm(h)
            var fromDisk: [String: ProxyHarness.Reply] = [:]
            for path in Self.paths { fromDisk[path] = try await h.get(path) }
            let before = try Self.spilledHits(h)
            for path in Self.paths {
                let reply = try await h.get(path)
                let first = try #require(fromDisk[path])
                #expect(reply.status == 200 && reply.text == first.text, "\(path): \(reply.text)")
                #expect(reply.cacheStatus.contains("hit") && reply.cacheStatus.contains("ttl="), "\(reply.cacheStatus)")
                #expect(reply.headers["Age"].count == 1)
                #expect(reply.headers["Content-Length"] == [String(first.body.count)])
                #expect(reply.headers["Cache-Control"] == ["max-age=3600"])
                // Every field of the disk hit is there once, in the same order but for the ones each hit sets.
                let names = reply.headers.map { $0.name.lowercased() }
                let firstNames = first.headers.map { $0.name.lowercased() }
                #expect(names.sorted() == firstNames.sorted(), "\(names) vs \(firstNames)")
            }
            #expect(try Self.spilledHits(h) >= before + Self.paths.count, "the second requests came from the spill")
            #expect(h.origin.requestCount == 12)
            let figures = try #require(h.cache).spilledAnswerFigures
            #expect(figures.bytes > 0)
            // The places in memory are charged: the level stays within its capacity.
            let memory = try #require(h.cache).memoryUsage
            #expect(memory <= Self.memoryCapacity, "\(memory)")
        }
    }

    @Test("a purge is final for a spilled answer: the next request is fetched again, on every connection")
    func purgeEndsSpilledAnswer() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.cache.memoryCapacity = Self.memoryCapacity
            },
            script: Self.script
        ) { h in
            try await Self.warm(h)
            for _ in 0..<2 { _ = try await h.get("/u/1") }
            let before = try Self.spilledHits(h)
            let spilled = try await h.get("/u/1")
            #expect(try Self.spilledHits(h) == before + 1, "served from the spill")
            #expect(try await h.admin(.POST, "/purge?url=\(h.origin.baseURL)/u/1").status == 200)
            let after = try await h.get("/u/1")
            #expect(after.text != spilled.text && after.text.hasPrefix("/u/1 #"), "\(after.text)")
            #expect(h.origin.requestCount == 13)
        }
    }

    @Test("a reload stores a new response: the spilled answer of the old one is not sent again")
    func replacementEndsSpilledAnswer() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            try await Self.warm(h)
            for _ in 0..<2 { _ = try await h.get("/u/2") }
            let old = try await h.get("/u/2")
            let reloaded = try await h.get("/u/2", headers: [("Cache-Control", "no-cache")])
            #expect(reloaded.text != old.text)
            // Push the new records out of memory, so the next read of /u/2 is the disk's.
            for n in 20..<26 { _ = try await h.get("/u/\(n)") }
            for _ in 0..<3 {
                let reply = try await h.get("/u/2")
                #expect(reply.text == reloaded.text, "\(reply.text) after the reload gave \(reloaded.text)")
            }
        }
    }

    @Test("a removal through another handle on the directory is final for a spilled answer")
    func removalElsewhereEndsSpilledAnswer() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            try await Self.warm(h)
            for _ in 0..<2 { _ = try await h.get("/u/0") }
            let before = try Self.spilledHits(h)
            let spilled = try await h.get("/u/0")
            #expect(try Self.spilledHits(h) == before + 1)
            let directory = try #require(h.cache?.disk?.directory)
            let other = try HTTPCache(directory: directory, configuration: try #require(h.cache).configuration)
            let request = HTTPRequest(
                method: .get,
                scheme: "http",
                authority: "127.0.0.1:\(h.origin.port)",
                path: "/u/0"
            )
            try await other.removeResponses(for: request)
            try await other.close()
            let after = try await h.get("/u/0")
            #expect(after.text != spilled.text, "\(after.text)")
            // Memory was emptied with every place in it; the spilled bytes went too (and the
            // answer just read from disk was spilled again).
            let hits = try Self.spilledHits(h)
            #expect(try #require(h.cache).spilledAnswerFigures.bytes < 1_000)
            #expect(try await h.get("/u/1").cacheStatus.contains("hit"))
            #expect(try Self.spilledHits(h) == hits, "/u/1's place went with memory")
        }
    }

    @Test("a clear empties the answers file with memory: nothing spilled is sent after it")
    func clearEmptiesTheSpill() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            try await Self.warm(h)
            for path in Self.paths {
                for _ in 0..<2 { _ = try await h.get(path) }
            }
            let cache = try #require(h.cache)
            #expect(cache.spilledAnswerFigures.bytes > 0)
            _ = try await cache.removeAll()
            #expect(cache.spilledAnswerFigures.bytes == 0)
            let hits = cache.spilledAnswerFigures.hits
            for path in Self.paths {
                let reply = try await h.get(path)
                #expect(!reply.cacheStatus.contains("hit"), "\(path): \(reply.cacheStatus)")
            }
            #expect(cache.spilledAnswerFigures.hits == hits)
            #expect(h.origin.requestCount == 12 + Self.paths.count)
        }
    }

    @Test("bytes garbled in the answers file are a miss of the spill: the disk's copy is sent, never the garbage")
    func garbledSpillIsNotSent() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            try await Self.warm(h)
            var expected: [String: String] = [:]
            for path in Self.paths {
                for _ in 0..<2 { expected[path] = try await h.get(path).text }
            }
            let directory = try #require(h.cache?.disk?.directory.path)
            let descriptor = try #require(
                Self.answersFileDescriptor(in: directory),
                "the anonymous answers file is open"
            )
            // The same file through this process's descriptor table, every byte overwritten.
            let garbage = try #require(Self.reopenedForWriting(descriptor))
            let size = Int(try garbage.seekToEnd())
            #expect(size > 0)
            try garbage.seek(toOffset: 0)
            try garbage.write(contentsOf: Data(repeating: 0x5A, count: size))
            try garbage.close()
            let hits = try Self.spilledHits(h)
            for path in Self.paths {
                let reply = try await h.get(path)
                #expect(reply.status == 200 && reply.text == expected[path], "\(path): \(reply.text.prefix(40))")
            }
            #expect(try Self.spilledHits(h) == hits, "no garbled answer counted as a hit")
            #expect(h.origin.requestCount == 12, "the disk's copies answered")
        }
    }

    @Test("a spilled answer ends with the response's freshness")
    func spilledAnswerEndsWhenStale() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: {
                $0.cache.memoryCapacity = Self.memoryCapacity
                $0.cache.clock = clock.cacheClock
            },
            script: Self.script
        ) { h in
            try await Self.warm(h)
            for _ in 0..<2 { _ = try await h.get("/u/1") }
            let spilled = try await h.get("/u/1")
            clock.advance(by: .seconds(1_800))
            let older = try await h.get("/u/1")
            #expect(older.text == spilled.text && older.headers["Age"].first.flatMap(Int.init) ?? 0 >= 1_800)
            clock.advance(by: .seconds(1_801))
            let refetched = try await h.get("/u/1")
            #expect(refetched.text != spilled.text, "stale after an hour: \(refetched.text)")
        }
    }

    /// The descriptor of this process's anonymous file in `directory`, if any: on Linux the
    /// `O_TMPFILE` file `/proc/self/fd` shows as `DIRECTORY/#INODE (deleted)`; on Apple platforms
    /// the unlinked `.anonymous-` file whose path `F_GETPATH` still gives.
    static func answersFileDescriptor(in directory: String) -> Int32? {
        #if canImport(Darwin)
        var path = [CChar](repeating: 0, count: Int(MAXPATHLEN))
        for descriptor in Int32(0)..<4_096 where fcntl(descriptor, F_GETPATH, &path) == 0 {
            let target = String(cString: path)
            if target.hasPrefix(directory + "/.anonymous-") { return descriptor }
        }
        return nil
        #elseif canImport(Glibc)
        let table = "/proc/self/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: table)) ?? []
        for entry in entries {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: table + "/" + entry)
            else { continue }
            if target.hasPrefix(directory + "/"), target.hasSuffix("(deleted)") { return Int32(entry) }
        }
        return nil
        #endif
    }

    /// `descriptor`'s file opened again for writing (on Linux through `/proc/self/fd`, which
    /// opens the same file; elsewhere a duplicate of the descriptor).
    static func reopenedForWriting(_ descriptor: Int32) -> FileHandle? {
        #if canImport(Darwin)
        let duplicate = dup(descriptor)
        return duplicate >= 0 ? FileHandle(fileDescriptor: duplicate, closeOnDealloc: true) : nil
        #elseif canImport(Glibc)
        return FileHandle(forWritingAtPath: "/proc/self/fd/\(descriptor)")
        #endif
    }
}
