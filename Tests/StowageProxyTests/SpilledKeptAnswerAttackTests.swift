import Foundation
import HTTPTypes
import NIOHTTP1
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import StowageTesting
import Testing

@testable import StowageProxy

/// Answers memory holds in full, spilled on their next hit while memory evicts
/// (`HTTPCache.spillKept`), as hostile clients, racing invalidations and the will-cache hook
/// meet them: the bytes sent are the cache's answer, an invalidation is final, memory stays
/// within its capacity, and an answer that is not spilled costs no disk read per hit.
///
/// The cache's clock stands still in most tests: `MemoryEvictionWatch` compares once per second
/// of it, so memory counts as evicting for the whole test once the warming evicted.
@Suite("Answers kept in full, spilled while memory evicts, under attack", .timeLimit(.minutes(10)))
struct SpilledKeptAnswerAttackTests {
    /// `/u/N` and `/m` say their path and the origin's request number; `/lang` varies on
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

    static func configure(_ clock: ManualClock) -> (inout ProxyConfiguration) -> Void {
        { configuration in
            configuration.admin = .init(port: 0)
            configuration.cache.memoryCapacity = SpilledKeptAnswerTests.memoryCapacity
            configuration.cache.clock = clock.cacheClock
        }
    }

    /// The origin's request number a `/u/N` body ends with.
    static func number(_ text: String) -> Int {
        Int(text.split(separator: "#").last ?? "") ?? -1
    }

    static func figures(_ h: ProxyHarness) throws -> (spilledHits: Int, spilledBytes: Int64, diskHits: Int) {
        let cache = try #require(h.cache)
        let spilled = cache.spilledAnswerFigures
        return (spilled.hits, spilled.bytes, cache.statistics.disk.hits)
    }

    @Test(
        "another client's answer kept for a URL spilled from memory goes once the spill answers it: memory does not keep it, nor look its records up on every hit"
    )
    func otherClientsKeptAnswerGoesWithTheSpill() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: {
                Self.configure(clock)(&$0)
                $0.cache.memoryCapacity = ByteCount(16_000)
            },
            script: Self.script
        ) { h in
            for n in 0..<24 { _ = try await h.get("/u/\(n)") }
            let a = [("X-Client", "a")]
            let b = [("X-Client", "b")]
            // Each client's request gets its own answer kept in full, from the records and body
            // memory holds for the last URL stored.
            let expected = try await h.get("/u/23", headers: a).text
            #expect(try await h.get("/u/23", headers: b).text == expected)
            // Memory evicts: a's answer is spilled, and memory lets the records and body go.
            #expect(try await h.get("/u/23", headers: a).text == expected)
            #expect(try Self.figures(h).spilledBytes > 0)
            // b's kept answer no longer stands; the spill answers b (its request differs in no
            // field the answer depends on).
            let before = try Self.figures(h).spilledHits
            #expect(try await h.get("/u/23", headers: b).text == expected)
            #expect(try Self.figures(h).spilledHits == before + 1)
            let cache = try #require(h.cache)
            let misses = cache.statistics.memory.misses
            for _ in 0..<3 {
                #expect(try await h.get("/u/23", headers: b).text == expected)
            }
            #expect(try Self.figures(h).spilledHits == before + 4, "b from the spill")
            #expect(
                cache.statistics.memory.misses == misses,
                "b's answer that no longer stands stayed in memory, its records looked up on every hit"
            )
            #expect(h.origin.requestCount == 24)
        }
    }

    @Test(
        "a URL with two variants asked for in turn, kept in full while memory evicts: the right variant each time, and no disk read per hit"
    )
    func variantsAskedForInTurnStayInFull() async throws {
        let clock = ManualClock(startingAt: Date())
        // Room for both variants in full; the warming evicts.
        try await ProxyHarness.run(
            configure: {
                Self.configure(clock)(&$0)
                $0.cache.memoryCapacity = ByteCount(16_000)
            },
            script: Self.script
        ) { h in
            for n in 0..<24 { _ = try await h.get("/u/\(n)") }
            let en = [("Accept-Language", "en")]
            let de = [("Accept-Language", "de")]
            let english = try await h.get("/lang", headers: en).text
            let german = try await h.get("/lang", headers: de).text
            #expect(english != german)
            // Both kept in full: the records and both bodies are in memory.
            #expect(try await h.get("/lang", headers: en).text == english)
            #expect(try await h.get("/lang", headers: de).text == german)
            let before = try Self.figures(h)
            for round in 0..<4 {
                #expect(try await h.get("/lang", headers: en).text == english, "round \(round)")
                #expect(try await h.get("/lang", headers: de).text == german, "round \(round)")
            }
            let after = try Self.figures(h)
            // The two variants share one place for a spilled answer (target and Host): spilled,
            // each would push the other out, and every hit would read the disk index again.
            #expect(after.diskHits == before.diskHits, "disk hits \(before.diskHits) → \(after.diskHits)")
            #expect(after.spilledBytes == before.spilledBytes)
            #expect(h.origin.requestCount == 26)
        }
    }

    @Test(
        "records in memory without their body (evicted first: hits touch the records alone): the body read from disk is kept, not read again on every hit"
    )
    func bodyEvictedBeforeItsRecordsIsNotReadOnEveryHit() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(configure: Self.configure(clock), script: Self.script) { h in
            let stored = try await h.get("/x").text
            // Misses push the body out; HEAD requests keep the records in use.
            for n in 0..<12 {
                _ = try await h.get("/c/\(n)")
                #expect(try await h.get("/x", method: .HEAD).status == 200)
            }
            for _ in 0..<4 { #expect(try await h.get("/x").text == stored) }
            let before = try Self.figures(h)
            for _ in 0..<4 { #expect(try await h.get("/x").text == stored) }
            let after = try Self.figures(h)
            #expect(after.diskHits == before.diskHits, "disk hits \(before.diskHits) → \(after.diskHits)")
            #expect(h.origin.requestCount == 13)
        }
    }

    @Test(
        "a response the will-cache hook keeps in memory only is never spilled: the same bytes from memory while it evicts"
    )
    func memoryOnlyAnswerIsNotSpilled() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: {
                Self.configure(clock)(&$0)
                $0.cache.willCache = { proposal in
                    var proposal = proposal
                    if proposal.request.path == "/m" { proposal.storage = .memoryOnly }
                    return proposal
                }
            },
            script: Self.script
        ) { h in
            for n in 0..<12 { _ = try await h.get("/u/\(n)") }
            let first = try await h.get("/m").text
            #expect(try await h.get("/m").text == first)
            let before = try Self.figures(h)
            for _ in 0..<4 {
                let reply = try await h.get("/m")
                #expect(reply.text == first)
                #expect(reply.cacheStatus.contains("hit"), "\(reply.cacheStatus)")
            }
            #expect(try Self.figures(h).spilledBytes == before.spilledBytes)
            #expect(h.origin.requestCount == 12 + 1)
        }
    }

    @Test(
        "an answer that cannot be spilled (its body in a file on disk) costs one disk read, not one per hit, while memory evicts, across refreshes once a second"
    )
    func unspillableAnswerIsNotReadFromDiskOnEveryHit() async throws {
        let clock = ManualClock(startingAt: Date())
        // Bodies over the disk index's inline threshold (16 KiB), under memory's entry limit.
        let filler = String(repeating: "x", count: 20_000)
        let script: TestOriginServer.Script = { received in
            let path = received.head.path ?? "/"
            return .init(fields: [("Cache-Control", "max-age=3600")], body: "\(path) #\(received.index) \(filler)")
        }
        try await ProxyHarness.run(
            configure: {
                Self.configure(clock)(&$0)
                $0.cache.memoryCapacity = ByteCount(500_000)
            },
            script: script
        ) { h in
            for n in 0..<30 { _ = try await h.get("/big/\(n)") }
            let first = try await h.get("/f").text
            // Kept in full, then its first hit while memory evicts tries to spill it: its body
            // is not in the disk index.
            #expect(try await h.get("/f").text == first)
            #expect(try await h.get("/f").text == first)
            for round in 0..<4 {
                clock.advance(by: .seconds(1))
                _ = try await h.get("/c/\(round)")
                let before = try Self.figures(h)
                for _ in 0..<3 {
                    #expect(try await h.get("/f").text == first, "round \(round)")
                }
                let after = try Self.figures(h)
                #expect(after.diskHits == before.diskHits, "round \(round): \(before.diskHits) → \(after.diskHits)")
                #expect(after.spilledBytes == before.spilledBytes)
            }
            #expect(h.origin.requestCount == 30 + 1 + 4)
        }
    }

    @Test("HEAD, HTTP/1.0, Connection: close and Pragma requests of a URL spilled from memory get their own answers")
    func otherRequestsOfAURLSpilledFromMemory() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(configure: Self.configure(clock), script: Self.script) { h in
            let kept = try await SpilledKeptAnswerTests.warmAndKeep(h)
            _ = try await h.get("/u/11")
            #expect(try Self.figures(h).spilledBytes > 0)
            let port = h.proxyPort
            let requests = [
                "GET /u/11 HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n",
                "GET /u/11 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n",
            ]
            for request in requests {
                let responses = try await onOwnThread { () -> [EventLoopHitAttackTests.Parsed] in
                    let socket = try RawSocket(port: port, receiveTimeout: 60)
                    socket.send(request)
                    return EventLoopHitAttackTests.read(socket, bodiless: [false])
                }
                #expect(responses.map(\.text) == [kept.text], "\(request)")
            }
            let head = try await h.get("/u/11", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty)
            #expect(head.headers["Content-Length"] == [String(kept.body.count)])
            #expect(try await h.get("/u/11").text == kept.text)
            #expect(h.origin.requestCount == 12)
            // Pragma: no-cache (RFC 9111 §5.4) goes to the origin; what it brings replaces the spilled answer.
            let reloaded = try await h.get("/u/11", headers: [("Pragma", "no-cache")])
            #expect(reloaded.text != kept.text && reloaded.text.hasPrefix("/u/11 #"))
            for _ in 0..<3 { #expect(try await h.get("/u/11").text == reloaded.text) }
        }
    }

    @Test(
        "a 304 that freshens a response spilled from memory: every later hit sends the fields it brought (RFC 9111 §4.3.4)"
    )
    func revalidationUpdatesAnAnswerSpilledFromMemory() async throws {
        let clock = ManualClock(startingAt: Date())
        // `/r` is fresh for a minute, with a validator; a conditional request gets a 304 whose
        // X-Version (the origin's request number) and freshness, an hour, replace the stored ones.
        let script: TestOriginServer.Script = { received in
            guard received.head.path == "/r" else { return try await Self.script(received) }
            let fields = [("ETag", "\"e\""), ("X-Version", "\(received.index)")]
            if received.head.headerFields[.ifNoneMatch] != nil {
                return .init(status: 304, fields: fields + [("Cache-Control", "max-age=3600")])
            }
            return .init(fields: fields + [("Cache-Control", "max-age=60")], body: "/r body")
        }
        try await ProxyHarness.run(configure: Self.configure(clock), script: script) { h in
            for n in 0..<12 { _ = try await h.get("/u/\(n)") }
            let first = try await h.get("/r")
            #expect(first.headers["X-Version"] == ["13"])
            for _ in 0..<2 { #expect(try await h.get("/r").headers["X-Version"] == ["13"]) }
            #expect(try Self.figures(h).spilledBytes > 0, "spilled from memory")
            clock.advance(by: .seconds(120))
            let revalidated = try await h.get("/r")
            #expect(h.origin.requestCount == 14)
            #expect(revalidated.headers["X-Version"] == ["14"] && revalidated.text == "/r body")
            for attempt in 0..<4 {
                let reply = try await h.get("/r")
                #expect(reply.headers["X-Version"] == ["14"], "hit \(attempt): \(reply.headers)")
                #expect(reply.text == "/r body")
            }
            #expect(h.origin.requestCount == 14)
        }
    }

    @Test(
        "a ban by prefix, an unsafe request and a clear through another handle are final for an answer spilled from memory"
    )
    func invalidationsEndAnswersSpilledFromMemory() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(configure: Self.configure(clock), script: Self.script) { h in
            var kept = try await SpilledKeptAnswerTests.warmAndKeep(h)
            _ = try await h.get("/u/11")
            #expect(try Self.figures(h).spilledBytes > 0)
            #expect(try await h.admin(.POST, "/ban?prefix=\(h.origin.baseURL)/u/1").status == 200)
            var after = try await h.get("/u/11")
            #expect(after.text != kept.text && after.text.hasPrefix("/u/11 #"), "after a ban: \(after.text)")

            // Kept again, spilled again, then a POST to it (RFC 9111 §4.4).
            kept = after
            #expect(try await h.get("/u/11").text == kept.text)
            #expect(try await h.get("/u/11").text == kept.text)
            _ = try await h.get("/u/11", method: .POST, body: Array("x".utf8))
            after = try await h.get("/u/11")
            #expect(after.text != kept.text && after.text.hasPrefix("/u/11 #"), "after a POST: \(after.text)")

            kept = after
            #expect(try await h.get("/u/11").text == kept.text)
            #expect(try await h.get("/u/11").text == kept.text)
            let cache = try #require(h.cache)
            let other = try HTTPCache(
                directory: try #require(cache.disk?.directory),
                configuration: cache.configuration
            )
            _ = try await other.removeAll()
            try await other.close()
            after = try await h.get("/u/11")
            #expect(after.text != kept.text && after.text.hasPrefix("/u/11 #"), "after a clear: \(after.text)")
        }
    }

    @Test(
        "replacements and purges racing hits that spill from memory: once one has returned, every later hit sends what it left"
    )
    func invalidationsRacingSpillsAreFinal() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.cache.memoryCapacity = SpilledKeptAnswerTests.memoryCapacity
            },
            script: Self.script
        ) { h in
            for n in 0..<12 { _ = try await h.get("/u/\(n)") }
            for round in 0..<24 {
                // A miss: memory evicts this second too.
                _ = try await h.get("/c/\(round)")
                let path = "/u/\(round % 12)"
                _ = try await h.get(path)
                _ = try await h.get(path)  // kept in full (or spilled already)
                let purges = round % 2 == 1
                let fetchedBefore = h.origin.requestCount
                async let hits: [String] = {
                    var texts: [String] = []
                    for _ in 0..<4 { texts.append(try await h.get(path).text) }
                    return texts
                }()
                let left: String?
                if purges {
                    #expect(try await h.admin(.POST, "/purge?url=\(h.origin.baseURL)\(path)").status == 200)
                    left = nil
                } else {
                    left = try await h.get(path, headers: [("Cache-Control", "no-cache")]).text
                }
                for text in try await hits { #expect(text.hasPrefix("\(path) #")) }
                let next = try await h.get(path).text
                if let left {
                    // The reload's response, or one fetched after it (never one before it).
                    #expect(
                        Self.number(next) >= Self.number(left),
                        "round \(round): \(next) after the reload gave \(left)"
                    )
                }
                for _ in 0..<3 {
                    #expect(try await h.get(path).text == next, "round \(round)")
                }
                if purges {
                    // Fetched after the purge began: newer than anything the origin sent before.
                    #expect(
                        Self.number(next) > fetchedBefore,
                        "round \(round): \(next), \(fetchedBefore) fetched before the purge"
                    )
                }
            }
        }
    }

    @Test("a working set spilled from memory and read again: memory stays within its capacity after every request")
    func spillsFromMemoryStayWithinCapacity() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(configure: Self.configure(clock), script: Self.script) { h in
            let cache = try #require(h.cache)
            let capacity = SpilledKeptAnswerTests.memoryCapacity
            for n in 0..<30 {
                for _ in 0..<3 {
                    #expect(try await h.get("/u/\(n)").text.hasPrefix("/u/\(n) #"))
                    #expect(cache.memoryUsage <= capacity, "\(cache.memoryUsage)")
                }
            }
            for n in 0..<30 {
                #expect(try await h.get("/u/\(n)").text.hasPrefix("/u/\(n) #"))
                #expect(cache.memoryUsage <= capacity, "\(cache.memoryUsage)")
            }
            #expect(h.origin.requestCount == 30)
        }
    }
}
