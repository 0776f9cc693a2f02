import Foundation
import HTTPTypes
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// Answers from memory given again without deciding again (`RecentAnswers`): only while they
/// stand, and within their bound.
@Suite struct RecentAnswersTests {
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
            #expect(cache.recentAnswers.answer(to: request()) != nil)
            clock.advance(by: .milliseconds(100))
            #expect(cache.respondFromMemory(to: request())?.response.headerFields[.age] == "2")
            clock.advance(by: .seconds(1))
            #expect(cache.respondFromMemory(to: request())?.response.headerFields[.age] == "3")
            try await cache.invalidate(url: "http://origin.test/resource")
            #expect(cache.respondFromMemory(to: request()) == nil, "a purged response is not given again")
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

    @Test("Bounded by bytes and entries; a purge for storage pressure forgets them")
    func bounded() async throws {
        let answers = RecentAnswers(maximumBytes: 3 * (512 + 100))
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in
                ok(String(repeating: "x", count: 100), [("Cache-Control", "max-age=60")], clock: clock)
            }
            for n in 0..<10 {
                let path = request(.get, "/r\(n)")
                _ = try await text(try await cache.respond(to: path, fetch: origin.fetch))
                answers.keep(try #require(cache.memoryAnswer(to: path)), for: path)
                let kept = (0...n).filter { answers.answer(to: request(.get, "/r\($0)")) != nil }.count
                #expect(kept == min(n + 1, 3))
                #expect(answers.answer(to: path) != nil, "the newest is kept")
            }
            #expect(RecentAnswers(maximumBytes: 0).maximumBytes == 0)
            _ = cache.respondFromMemory(to: request(.get, "/r9"))
            #expect(cache.recentAnswers.answer(to: request(.get, "/r9")) != nil)
            _ = try await cache.purge(PurgeRequest(bytesToFree: ByteCount(1)))
            #expect(cache.recentAnswers.answer(to: request(.get, "/r9")) == nil)
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
        let answers = RecentAnswers(maximumBytes: 4 * (512 + 100))
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in
                ok(String(repeating: "x", count: 100), [("Cache-Control", "max-age=60")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            // Given: requests that differ in a 4 KiB field each, answered from memory.
            let padded = (0..<10).map { n in
                request(.get, "/resource", [("X-Pad", String(n) + String(repeating: "p", count: 4_096))])
            }
            for padded in padded {
                answers.keep(try #require(cache.memoryAnswer(to: padded)), for: padded)
            }
            // Then: what is kept holds no more request bytes than the bound.
            let kept = padded.filter { answers.answer(to: $0) != nil }.count
            #expect(
                kept * 4_096 <= answers.maximumBytes,
                "\(kept) entries of 4 KiB kept in \(answers.maximumBytes) bytes"
            )
        }
    }
}
