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
}
