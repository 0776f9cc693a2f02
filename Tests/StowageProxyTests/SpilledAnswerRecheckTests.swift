import Dispatch
import Foundation
import StowageCache
import StowageCore
import StowageHTTPTestSupport
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache
@testable import StowageProxy

/// The look-ups of a spilled answer's records that time calls for (`SpilledAnswerRechecks`): made
/// off the hit, spread from answer to answer, and still final for records the disk let go.
@Suite("Spilled answers' timed look-ups", .timeLimit(.minutes(10)))
struct SpilledAnswerRecheckTests {
    @Test(
        "an answer due for its timed look-up is sent at once; the look-up, off the hit, takes it out once the disk lost its records"
    )
    func timedLookUpRunsOffTheHit() async throws {
        try await Self.withSpilledAnswer(at: "/u/1") { h, clock, cache, disk, recordKey in
            let spilled = try await h.get("/u/1")
            var hits = cache.spilledAnswerFigures.hits
            // The disk level lets the records go behind the levels' back, as its trim for its
            // capacity does: no change the hit would see.
            #expect(try await disk.removeData(forKey: recordKey))
            let early = try await h.get("/u/1")
            #expect(early.text == spilled.text && cache.spilledAnswerFigures.hits == hits + 1)
            hits += 1
            // Past the latest second any answer is looked up again.
            clock.advance(by: .seconds(SpilledAnswer.recheckSeconds * 3 / 2 + 1))
            let due = try await h.get("/u/1")
            #expect(due.text == spilled.text, "sent from the spill while the look-up waits: \(due.text)")
            #expect(cache.spilledAnswerFigures.hits == hits + 1)
            hits += 1
            await cache.spilledRechecks.waitUntilMade()
            #expect(cache.spilledRechecks.pendingCount == 0)
            let after = try await h.get("/u/1")
            #expect(after.text != spilled.text, "the records are gone: fetched again, \(after.text)")
            #expect(cache.spilledAnswerFigures.hits == hits)
            #expect(h.origin.requestCount == 13)
        }
    }

    @Test(
        "an answer whose records the disk still holds stays after its timed look-up, which rewrites their access time"
    )
    func timedLookUpKeepsWhatTheDiskHolds() async throws {
        try await Self.withSpilledAnswer(at: "/u/2") { h, clock, cache, disk, recordKey in
            let spilled = try await h.get("/u/2")
            clock.advance(by: .seconds(SpilledAnswer.recheckSeconds * 3 / 2 + 1))
            let lookUpSecond = clock.now.timeIntervalSince1970
            let hits = cache.spilledAnswerFigures.hits
            #expect(try await h.get("/u/2").text == spilled.text)
            await cache.spilledRechecks.waitUntilMade()
            try disk.flushAccessLog()
            let accessed = try #require(try await disk.info(forKey: recordKey)).accessed
            #expect(accessed.timeIntervalSince1970 >= lookUpSecond - 1, "access time rewritten: \(accessed)")
            for _ in 0..<3 { #expect(try await h.get("/u/2").text == spilled.text) }
            #expect(cache.spilledAnswerFigures.hits == hits + 4)
            #expect(h.origin.requestCount == 12)
        }
    }

    @Test("timed look-ups are spread over half a period more, answer by answer, and never earlier")
    func lookUpSecondsAreSpread() {
        let period = SpilledAnswer.recheckSeconds
        var generator = SystemRandomNumberGenerator()
        var buckets = [Int](repeating: 0, count: 10)
        for _ in 0..<10_000 {
            let fingerprint = generator.next() as UInt64
            let second = SpilledAnswer.recheckSecond(after: 1_000, fingerprint: fingerprint)
            #expect((1_000 + period)..<(1_000 + period * 3 / 2) ~= second)
            buckets[Int((second - 1_000 - period) * 10 / (period / 2))] += 1
        }
        // Each tenth of the spread gets about a tenth of the answers (1,000 ± 20%).
        #expect(buckets.allSatisfy { (800...1_200).contains($0) }, "\(buckets)")
        #expect(SpilledAnswer.recheckSecond(after: 0, fingerprint: 0) == period)
        #expect(SpilledAnswer.recheckSecond(after: 0, fingerprint: 299) == period + 299)
        #expect(SpilledAnswer.recheckSecond(after: 0, fingerprint: .max) == period + Int64(UInt64.max % 300))
    }

    @Test("at most 256 look-ups wait, and a clear drops those waiting; the lane goes on after both")
    func waitingLookUpsAreBoundedAndCleared() async {
        let rechecks = SpilledAnswerRechecks()
        let gate = DispatchSemaphore(value: 0)
        let made = Mutex<[String]>([])
        let (started, starting) = AsyncStream.makeStream(of: String.self)
        let check: @Sendable (SpilledAnswerRechecks.Recheck) -> Void = { recheck in
            starting.yield(recheck.recordKey)
            if recheck.recordKey == "first" { gate.wait() }
            made.withLock { $0.append(recheck.recordKey) }
        }
        func recheck(_ key: String) -> SpilledAnswerRechecks.Recheck {
            .init(recordKey: key, memoryKey: "memory \(key)", answer: Self.answer())
        }
        #expect(rechecks.enqueue(recheck("first"), check: check))
        var iterator = started.makeAsyncIterator()
        #expect(await iterator.next() == "first", "the lane holds the first look-up")
        for n in 0..<SpilledAnswerRechecks.pendingLimit {
            #expect(rechecks.enqueue(recheck("k\(n)"), check: check))
        }
        #expect(!rechecks.enqueue(recheck("one too many"), check: check))
        #expect(rechecks.pendingCount == SpilledAnswerRechecks.pendingLimit)
        rechecks.removeAllPending()
        #expect(rechecks.pendingCount == 0)
        gate.signal()
        await rechecks.waitUntilMade()
        #expect(made.withLock { $0 } == ["first"])
        #expect(rechecks.enqueue(recheck("later"), check: check))
        await rechecks.waitUntilMade()
        #expect(made.withLock { $0 } == ["first", "later"])
        starting.finish()
    }

    @Test("the lane makes its look-ups in bursts of 16 and rests nine times as long as each burst took")
    func lookUpsArePaced() async {
        let rechecks = SpilledAnswerRechecks()
        let gate = DispatchSemaphore(value: 0)
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        // For each look-up after the first: how many waited when it began, and when it began and ended.
        let made = Mutex<[(waiting: Int, began: UInt64, ended: UInt64)]>([])
        let check: @Sendable (SpilledAnswerRechecks.Recheck) -> Void = { recheck in
            if recheck.recordKey == "first" {
                starting.yield()
                gate.wait()
                return
            }
            let began = DispatchTime.now().uptimeNanoseconds
            let waiting = rechecks.pendingCount
            usleep(1_000)
            made.withLock { $0.append((waiting, began, DispatchTime.now().uptimeNanoseconds)) }
        }
        func recheck(_ key: String) -> SpilledAnswerRechecks.Recheck {
            .init(recordKey: key, memoryKey: "memory \(key)", answer: Self.answer())
        }
        #expect(rechecks.enqueue(recheck("first"), check: check))
        var iterator = started.makeAsyncIterator()
        await iterator.next()  // the lane holds "first", its burst's only look-up
        for n in 0..<40 { #expect(rechecks.enqueue(recheck("k\(n)"), check: check)) }
        gate.signal()
        await rechecks.waitUntilMade()
        starting.finish()
        let lookUps = made.withLock { $0 }
        // Then 16, 16 and 8: each burst taken whole before its first look-up.
        #expect(
            lookUps.map(\.waiting) == Array(repeating: 24, count: 16) + Array(repeating: 8, count: 16)
                + Array(repeating: 0, count: 8)
        )
        guard lookUps.count == 40 else { return }
        for end in [15, 31] {
            let took = lookUps[end].ended - lookUps[end - 15].began
            let rest = lookUps[end + 1].began - lookUps[end].ended
            let least = min(took * SpilledAnswerRechecks.restFactor, SpilledAnswerRechecks.longestRest)
            #expect(rest >= least, "rested \(rest) ns after a burst of \(took) ns")
        }
    }

    /// Runs `body` on a proxy on `clock` whose answer to `path` was read from disk and spilled
    /// (the next request for it is answered from the spill), with its cache, disk level and the
    /// record key of `path`.
    static func withSpilledAnswer(
        at path: String,
        _ body: @Sendable (ProxyHarness, ManualClock, HTTPCache, DiskCache, String) async throws -> Void
    ) async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: {
                $0.cache.memoryCapacity = SpilledAnswerProxyTests.memoryCapacity
                $0.cache.clock = clock.cacheClock
            },
            script: SpilledAnswerProxyTests.script
        ) { h in
            try await SpilledAnswerProxyTests.warm(h)
            for _ in 0..<2 { _ = try await h.get(path) }
            let cache = try #require(h.cache)
            let disk = try #require(cache.disk)
            let recordKey = try #require(try await disk.keys(withPrefix: "m ").first { $0.hasSuffix(path) })
            try await body(h, clock, cache, disk, recordKey)
        }
    }

    /// A spilled answer with nothing behind it, for the lane's own tests.
    static func answer() -> SpilledAnswer {
        SpilledAnswer(
            place: .init(generation: 0, length: 0, offset: 0, checksum: 0),
            keyLength: 0,
            form: SpilledForm(identity: [], head: [], body: [], addsDate: false),
            recordsFingerprint: 1,
            checkedAtChange: 0,
            checkAfterSecond: 0,
            correctedInitialAge: 0,
            responseSeconds: 0,
            freshness: 0,
            decisionValidUntil: 0
        )
    }
}
