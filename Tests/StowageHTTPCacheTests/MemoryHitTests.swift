import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// `HTTPCache.respondFromMemory(to:)`: the synchronous answer a server gives on its event loop
/// must be the answer `respond` gives, and must leave every other case to `respond`.
@Suite("HTTPCache answers from memory")
struct MemoryHitTests {
    private static let fresh = [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]

    private func cacheWithStoredResponse(
        _ root: URL,
        clock: ManualClock,
        configure: (inout HTTPCache.Configuration) -> Void = { _ in }
    ) async throws -> (HTTPCache, TestOrigin) {
        let cache = try makeCache(root, clock: clock, kind: .shared, configure: configure)
        let origin = TestOrigin { _, _ in ok("stored body", Self.fresh, clock: clock) }
        _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
        return (cache, origin)
    }

    @Test("a fresh response held in memory is answered at once, exactly as respond answers it")
    func freshHitMatchesRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, origin) = try await cacheWithStoredResponse(root, clock: clock) {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.userInfo = ["kept": "yes"]
                    return proposal
                }
            }
            clock.advance(by: .seconds(7))
            let fast = try #require(cache.respondFromMemory(to: request()))
            let slow = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(fast.outcome == .hit)
            #expect(fast.response == slow.response)
            #expect(fast.response.headerFields[.age] == "7")
            #expect(fast.status.description == slow.status.description)
            #expect(fast.trace == slow.trace, "\(fast.trace)")
            #expect(fast.userInfo == ["kept": "yes"])
            #expect(fast.body.bytesInMemory == Array("stored body".utf8))
            #expect(try await text(slow) == "stored body")
            #expect(origin.count == 1)
        }
    }

    @Test(
        "what needs the origin or a decision of respond's is left to respond",
        arguments: [
            ("nothing stored", request(.get, "/other")),
            ("request no-cache", request(.get, "/resource", [("Cache-Control", "no-cache")])),
            ("request Pragma: no-cache", request(.get, "/resource", [("Pragma", "no-cache")])),
            ("request no-store", request(.get, "/resource", [("Cache-Control", "no-store")])),
            ("request max-age=0", request(.get, "/resource", [("Cache-Control", "max-age=0")])),
            ("an unsafe method", request(.post, "/resource")),
            ("a DELETE", request(.delete, "/resource")),
        ]
    )
    func leftToRespond(reason: String, request: HTTPRequest) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, _) = try await cacheWithStoredResponse(root, clock: clock)
            clock.advance(by: .seconds(5))
            #expect(cache.respondFromMemory(to: request) == nil, "\(reason)")
        }
    }

    @Test("a stale response is left to respond, which validates it")
    func staleIsLeftToRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, _) = try await cacheWithStoredResponse(root, clock: clock)
            #expect(cache.respondFromMemory(to: request()) != nil)
            clock.advance(by: .seconds(61))
            #expect(cache.respondFromMemory(to: request()) == nil)
        }
    }

    @Test("a matching conditional request gets a 304 without a body, HEAD gets the fields only")
    func conditionalAndHead() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, _) = try await cacheWithStoredResponse(root, clock: clock)
            let conditional = try #require(
                cache.respondFromMemory(to: request(.get, "/resource", [("If-None-Match", "\"v1\"")]))
            )
            #expect(conditional.response.status.code == 304)
            #expect(conditional.body.bytesInMemory?.isEmpty ?? true)
            let other = try #require(
                cache.respondFromMemory(to: request(.get, "/resource", [("If-None-Match", "\"v0\"")]))
            )
            #expect(other.response.status.code == 200)
            let head = try #require(cache.respondFromMemory(to: request(.head, "/resource")))
            #expect(head.response.status.code == 200)
            #expect(head.body.bytesInMemory?.isEmpty ?? true)
        }
    }

    @Test("after reopening, a response only on disk is left to respond, which brings it into memory")
    func diskOnlyIsLeftToRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (_, origin) = try await cacheWithStoredResponse(root, clock: clock)
            let reopened = try makeCache(root, clock: clock, kind: .shared)
            #expect(reopened.respondFromMemory(to: request()) == nil)
            let served = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .hit)
            #expect(try await text(served) == "stored body")
            let fast = try #require(reopened.respondFromMemory(to: request()))
            #expect(fast.body.bytesInMemory == Array("stored body".utf8))
            #expect(origin.count == 1)
        }
    }

    @Test("a body too large for memory is left to respond, which reads it from disk")
    func bodyTooLargeForMemory() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared) { $0.memoryCapacity = ByteCount(4_000) }
            let body = String(repeating: "b", count: 3_000)
            let origin = TestOrigin { _, _ in ok(body, Self.fresh, clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            #expect(cache.respondFromMemory(to: request()) == nil)
            let served = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .hit)
            #expect(try await text(served) == body)
        }
    }

    @Test("an answer stays current until its Age or ttl reaches the next whole second, and no longer")
    func currentWithinItsSecond() async throws {
        try await withTemporaryDirectory { root in
            // A quarter second past the Date: age 0.25 s, ttl 59.75 s, both next tick at t0 + 1.
            let clock = ManualClock(startingAt: t0 + 0.25)
            let (cache, _) = try await cacheWithStoredResponse(root, clock: clock)
            let answer = try #require(cache.memoryAnswer(to: request()))
            #expect(answer.validUntil == t0 + 1)
            #expect(cache.isCurrent(answer))
            clock.advance(by: .milliseconds(500))
            #expect(cache.isCurrent(answer))
            clock.advance(by: .milliseconds(500))
            #expect(!cache.isCurrent(answer), "Age 1 and ttl=58 from here on")
            let later = try #require(cache.memoryAnswer(to: request()))
            #expect(later.served.response.headerFields[.age] == "1")
        }
    }

    @Test("a clear of the disk cache through another handle empties memory before the next answer")
    func clearByAnotherHandle() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0 + 0.25)
            let (cache, _) = try await cacheWithStoredResponse(root, clock: clock)
            let answer = try #require(cache.memoryAnswer(to: request()))
            #expect(cache.isCurrent(answer))
            let other = try makeCache(root, clock: clock, kind: .shared)
            try await other.removeAll()
            #expect(!cache.isCurrent(answer), "the kept answer outlived the clear")
            #expect(cache.respondFromMemory(to: request()) == nil)
        }
    }

    @Test(
        "removeAll's report: the disk tier's entries; in memory only an empty report with an empty path; on a closed disk tier it throws and memory answers nothing"
    )
    func removeAllReports() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0 + 0.25)
            let (cache, origin) = try await cacheWithStoredResponse(root, clock: clock)
            let report = try await cache.removeAll()
            #expect(report.removedCount > 0 && report.failures.isEmpty, "\(report)")
            #expect(report.path.hasPrefix(root.path(percentEncoded: false)), "\(report)")
            #expect(cache.respondFromMemory(to: request()) == nil)

            var configuration = HTTPCache.Configuration(kind: .shared)
            configuration.clock = clock.cacheClock
            let memoryOnly = try HTTPCache(directory: nil, configuration: configuration)
            _ = try await text(try await memoryOnly.respond(to: request(), fetch: origin.fetch))
            #expect(memoryOnly.respondFromMemory(to: request()) != nil)
            let empty = try await memoryOnly.removeAll()
            #expect(empty.path == "" && empty.failures.isEmpty && empty.removedCount == 0, "\(empty)")
            #expect(memoryOnly.respondFromMemory(to: request()) == nil)

            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            #expect(cache.respondFromMemory(to: request()) != nil)
            try await #require(cache.disk).close()
            await #expect(throws: StowageError.self) { try await cache.removeAll() }
            #expect(cache.respondFromMemory(to: request()) == nil, "memory is emptied even so")
        }
    }

    @Test("a plain request's decision stands until the response goes stale, with Age and ttl brought to now")
    func decisionStandsUntilStale() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0 + 0.25)
            let (cache, _) = try await cacheWithStoredResponse(root, clock: clock)
            let answer = try #require(cache.memoryAnswer(to: request()))
            clock.advance(by: .seconds(30))
            #expect(!cache.isCurrent(answer))
            #expect(cache.decisionStands(answer))
            let now = try #require(cache.respondFromMemory(to: request()))
            let fields = cache.currentFields(of: answer)
            #expect(fields.age == now.response.headerFields[.age])
            #expect(fields.cacheStatus == now.status.description, "\(fields.cacheStatus)")
            #expect(fields.validUntil == t0 + 31, "the next tick of its age: \(fields.validUntil)")
            // A request with a directive of its own is decided again every second.
            let asking = try #require(
                cache.memoryAnswer(to: request(.get, "/resource", [("Cache-Control", "max-age=100")]))
            )
            #expect(asking.decisionValidUntil == asking.validUntil)
            clock.advance(by: .seconds(30))
            #expect(!cache.decisionStands(answer), "stale now: decided again")
        }
    }
}
