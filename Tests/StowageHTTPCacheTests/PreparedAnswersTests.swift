import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// Answers from memory given again without deciding again (prepared answers, kept in the memory
/// level): only while they stand, and within `memoryCapacity` with the responses.
@Suite struct PreparedAnswersTests {
    @Test(
        "The same request again gets the same answer within the second, a new Age the next second, and a miss once purged"
    )
    func givenAgainOnlyWhileCurrent() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in ok("v1", [("Cache-Control", "max-age=60")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .milliseconds(2_500))
            let first = try #require(cache.respondFromMemory(to: request()))
            #expect(first.response.headerFields[.age] == "2")
            #expect(cache.preparedAnswer(for: request()) != nil)
            clock.advance(by: .milliseconds(100))
            #expect(cache.respondFromMemory(to: request())?.response.headerFields[.age] == "2")
            clock.advance(by: .seconds(1))
            #expect(cache.respondFromMemory(to: request())?.response.headerFields[.age] == "3")
            try await cache.invalidate(url: "http://origin.test/resource")
            #expect(cache.respondFromMemory(to: request()) == nil, "a purged response is not given again")
            #expect(cache.preparedAnswer(for: request()) == nil, "and the prepared answer went with it")
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .miss)
            #expect(origin.count == 2)
        }
    }

    @Test("A request that differs in any field gets its own answer: Vary and conditions are honoured")
    func differentRequestsDifferentAnswers() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, _ in
                let language = request.headerFields[HTTPField.Name("Accept-Language")!] ?? "none"
                return ok(
                    language,
                    [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language"), ("ETag", "\"v\"")],
                    clock: clock
                )
            }
            let english = request(.get, "/resource", [("Accept-Language", "en")])
            let french = request(.get, "/resource", [("Accept-Language", "fr")])
            _ = try await text(try await cache.respond(to: english, fetch: origin.fetch))
            _ = try await text(try await cache.respond(to: french, fetch: origin.fetch))
            for _ in 0..<3 {
                #expect(try await text(#require(cache.respondFromMemory(to: english))) == "en")
                #expect(try await text(#require(cache.respondFromMemory(to: french))) == "fr")
            }
            let conditional = request(.get, "/resource", [("Accept-Language", "en"), ("If-None-Match", "\"v\"")])
            #expect(cache.respondFromMemory(to: conditional)?.response.status == .notModified)
            #expect(cache.respondFromMemory(to: english)?.response.status == .ok)
        }
    }

    @Test("Charged to memoryCapacity with the responses; a purge for storage pressure forgets them")
    func bounded() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let capacity = 20_000
            let cache = try makeCache(root, clock: clock) { $0.memoryCapacity = ByteCount(Int64(capacity)) }
            let origin = TestOrigin { _, _ in
                ok(String(repeating: "x", count: 500), [("Cache-Control", "max-age=60")], clock: clock)
            }
            for n in 0..<60 {
                let path = request(.get, "/r\(n)")
                _ = try await text(try await cache.respond(to: path, fetch: origin.fetch))
                #expect(cache.respondFromMemory(to: path) != nil)
                #expect(cache.preparedAnswer(for: path) != nil, "the newest is kept")
                #expect(cache.memory.totalCost <= capacity, "\(cache.memory.totalCost) bytes charged")
            }
            // Each answer is charged (its body with it) beside the response it came from.
            let kept = (0..<60).filter { cache.preparedAnswer(for: request(.get, "/r\($0)")) != nil }.count
            #expect(kept > 0 && kept * 1_000 <= capacity, "\(kept) answers kept")
            _ = try await cache.purge(PurgeRequest(bytesToFree: ByteCount(1)))
            #expect(cache.preparedAnswer(for: request(.get, "/r59")) == nil)
            #expect(cache.memory.totalCost == 0)
        }
    }

    @Test("A clock set back: the answer kept is not given again with the Age of a later time")
    func clockSetBack() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in ok("v1", [("Cache-Control", "max-age=60")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .milliseconds(10_500))
            #expect(cache.respondFromMemory(to: request())?.response.headerFields[.age] == "10")
            // Given: the clock is set back 8 s (an NTP step).
            clock.advance(by: .seconds(-8))
            // Then: the answer is the one worked out now, as `memoryAnswer` and `respond` give it.
            let decided = try #require(cache.memoryAnswer(to: request()))
            #expect(decided.served.response.headerFields[.age] == "2")
            #expect(cache.respondFromMemory(to: request())?.response.headerFields[.age] == "2")
        }
    }

    @Test("Requests with large fields count them: the bound holds however large a request is")
    func largeRequestsCountTheirFields() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let capacity = 20_000
            let cache = try makeCache(root, clock: clock) { $0.memoryCapacity = ByteCount(Int64(capacity)) }
            let origin = TestOrigin { _, _ in
                ok(String(repeating: "x", count: 100), [("Cache-Control", "max-age=60")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            // Given: requests that differ in a 4 KiB field each, answered from memory.
            let padded = (0..<10).map { n in
                request(.get, "/resource", [("X-Pad", String(n) + String(repeating: "p", count: 4_096))])
            }
            for padded in padded {
                _ = cache.respondFromMemory(to: padded)
                #expect(cache.memory.totalCost <= capacity)
            }
            // Then: what is kept holds no more request bytes than the bound.
            let kept = padded.filter { cache.preparedAnswer(for: $0) != nil }.count
            #expect(kept > 0 && kept * 4_096 <= capacity, "\(kept) entries of 4 KiB kept in \(capacity) bytes")
        }
    }
}

extension HTTPCache {
    /// The answer kept in the memory level for `request`, if one is (the tests' look at it).
    func preparedAnswer(for request: HTTPRequest) -> PreparedAnswer? {
        let key = Self.preparedKey(RequestIdentity(request).hashValue)
        guard case .prepared(let kept) = memory.uncountedValue(forKey: key) else { return nil }
        return kept
    }
}
