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

/// Answers memory holds in full, spilled on their next hit while memory evicts for its capacity
/// (`HTTPCache.spillKept`, `MemoryEvictionWatch`): the same bytes as before, memory left with the
/// place only, nothing spilled while memory has room, and a purge or a reload as final for them
/// as for any spilled answer.
@Suite("Answers kept in full, spilled while memory evicts", .timeLimit(.minutes(10)))
struct SpilledKeptAnswerTests {
    /// Room for the records, body and prepared answer of about two responses: warming twelve
    /// URLs evicts, and the last one stored is still held in full.
    static let memoryCapacity = ByteCount(8_000)

    static let script: TestOriginServer.Script = { received in
        let path = received.head.path ?? "/"
        return .init(fields: [("Cache-Control", "max-age=3600")], body: "\(path) #\(received.index)")
    }

    static func spilled(_ h: ProxyHarness) throws -> (hits: Int, bytes: Int64) {
        try #require(h.cache).spilledAnswerFigures
    }

    /// Stores `/u/0` … `/u/11` (misses: memory evicts the earlier ones) and asks for `/u/11`, the
    /// last, once: its answer is prepared from the records and body memory holds.
    static func warmAndKeep(_ h: ProxyHarness) async throws -> ProxyHarness.Reply {
        for n in 0..<12 { _ = try await h.get("/u/\(n)") }
        return try await h.get("/u/11")
    }

    @Test("while memory evicts, an answer it holds in full is spilled on its next hit and sent from the spill after")
    func keptAnswerIsSpilledWhileMemoryEvicts() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            let kept = try await Self.warmAndKeep(h)
            #expect(try Self.spilled(h).bytes == 0, "nothing read from disk yet: nothing spilled")
            let second = try await h.get("/u/11")
            #expect(try Self.spilled(h).bytes > 0, "the answer held in full was spilled on this hit")
            let hitsBefore = try Self.spilled(h).hits
            let third = try await h.get("/u/11")
            #expect(try Self.spilled(h).hits == hitsBefore + 1, "sent from the spill")
            for reply in [second, third] {
                #expect(reply.status == 200 && reply.text == kept.text, "\(reply.text)")
                #expect(reply.cacheStatus.contains("hit"), "\(reply.cacheStatus)")
                #expect(reply.headers["Content-Length"] == [String(kept.body.count)])
                #expect(
                    reply.headers.map { $0.name.lowercased() }.sorted()
                        == kept.headers.map { $0.name.lowercased() }.sorted()
                )
            }
            #expect(h.origin.requestCount == 12)
        }
    }

    @Test("memory that evicts nothing keeps answers in full: none is spilled")
    func roomInMemoryKeepsAnswersInFull() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = ByteCount(64 << 20) }, script: Self.script) {
            h in
            var first: [String] = []
            for n in 0..<4 { first.append(try await h.get("/u/\(n)").text) }
            for _ in 0..<3 {
                for n in 0..<4 { #expect(try await h.get("/u/\(n)").text == first[n]) }
            }
            #expect(h.origin.requestCount == 4)
            #expect(try Self.spilled(h).bytes == 0)
            #expect(try Self.spilled(h).hits == 0)
        }
    }

    @Test("a purge is final for an answer spilled from memory: the next request goes to the origin")
    func purgeEndsAnswerSpilledFromMemory() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.cache.memoryCapacity = Self.memoryCapacity
            },
            script: Self.script
        ) { h in
            let kept = try await Self.warmAndKeep(h)
            _ = try await h.get("/u/11")
            #expect(try Self.spilled(h).bytes > 0)
            #expect(try await h.admin(.POST, "/purge?url=\(h.origin.baseURL)/u/11").status == 200)
            let after = try await h.get("/u/11")
            #expect(after.text != kept.text && after.text.hasPrefix("/u/11 #"), "fetched again: \(after.text)")
            #expect(h.origin.requestCount == 13)
            #expect(try await h.get("/u/11").text == after.text)
        }
    }

    @Test("a reload after an answer was spilled from memory: the new response is sent, never the spilled one")
    func reloadEndsAnswerSpilledFromMemory() async throws {
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: Self.script) {
            h in
            _ = try await Self.warmAndKeep(h)
            _ = try await h.get("/u/11")
            #expect(try Self.spilled(h).bytes > 0)
            let reloaded = try await h.get("/u/11", headers: [("Cache-Control", "no-cache")])
            #expect(h.origin.requestCount == 13)
            for _ in 0..<3 {
                let reply = try await h.get("/u/11")
                #expect(reply.text == reloaded.text, "\(reply.text) after the reload gave \(reloaded.text)")
            }
        }
    }

    @Test("a disk read whose answer is not spilled is kept in memory: its next hit reads nothing from disk")
    func unspilledDiskReadIsKept() async throws {
        // `/v` varies on X-B when the request has it, else on X-A: variants that vary on different
        // fields are never spilled (`HTTPCache.variesAlike`).
        let script: TestOriginServer.Script = { received in
            guard received.head.path == "/v" else { return try await Self.script(received) }
            let fields = received.head.headerFields
            let b = fields[HTTPField.Name("X-B")!]
            return .init(
                fields: [("Cache-Control", "max-age=3600"), ("Vary", b == nil ? "X-A" : "X-B")],
                body: "/v b=\(b ?? "none") #\(received.index)"
            )
        }
        try await ProxyHarness.run(configure: { $0.cache.memoryCapacity = Self.memoryCapacity }, script: script) { h in
            let a = try await h.get("/v", headers: [("X-A", "1")]).text
            _ = try await h.get("/v", headers: [("X-B", "2")])
            for n in 0..<12 { _ = try await h.get("/u/\(n)") }  // /v's records and bodies only on disk now
            let cache = try #require(h.cache)
            #expect(try await h.get("/v", headers: [("X-A", "1")]).text == a)
            #expect(cache.spilledAnswerFigures.bytes == 0, "variants varying on different fields: not spilled")
            let diskHits = cache.statistics.disk.hits
            for _ in 0..<3 { #expect(try await h.get("/v", headers: [("X-A", "1")]).text == a) }
            #expect(cache.statistics.disk.hits == diskHits, "answered from memory, not from the disk index again")
            #expect(h.origin.requestCount == 14)
        }
    }
}
