import Foundation
import Logging
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

@Suite("HybridCache memoize")
struct MemoizeTests {
    private func makeCache(
        _ scratch: TemporaryDirectory,
        clock: ManualClock,
        logs: RecordingLogHandler.Records? = nil
    ) throws -> HybridCache<String> {
        var configuration = DiskCache.Configuration()
        configuration.clock = clock.cacheClock
        if let logs { configuration.logger = Logger(label: "test") { _ in RecordingLogHandler(records: logs) } }
        return HybridCache(
            memory: try MemoryCache<String, String>(),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration),
            serializer: StringSerializer()
        )
    }

    /// A function to memoize that counts its runs and takes `duration` of real time (memoize
    /// times its computations on the continuous clock, and the early-refresh draw scales with
    /// that time); once `gated`, runs after the first wait for ``release()`` instead.
    private final class Computation: Sendable {
        let runs = Atomic<Int>(0)
        let finished = Atomic<Int>(0)
        let duration: Duration
        let gated: Bool
        private let released = Atomic<Bool>(false)
        init(duration: Duration = .milliseconds(20), gated: Bool = false) {
            self.duration = duration
            self.gated = gated
        }
        func release() { released.store(true, ordering: .releasing) }
        func callAsFunction() async throws -> String {
            let run = runs.add(1, ordering: .relaxed).newValue
            if gated, run > 1 {
                try await eventually { released.load(ordering: .acquiring) }
            } else {
                try await Task.sleep(for: duration)
            }
            finished.add(1, ordering: .relaxed)
            return "v\(run)"
        }
    }

    @Test("a miss computes once for all concurrent callers; hits return the stored value")
    func computesOnce() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try makeCache(scratch, clock: clock)
        let compute = Computation()
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { try await compute() }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "v1", count: 8))
        #expect(try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { try await compute() } == "v1")
        #expect(compute.runs.load(ordering: .relaxed) == 1)
        let info = try #require(try await cache.disk.info(forKey: "k"))
        #expect(info.computeSeconds.map { $0 >= 0.015 } == true)
        #expect(info.expires == clock.cacheClock.now().addingTimeInterval(10))
    }

    @Test("far from expiry nothing recomputes; after expiry the next call computes again")
    func expiry() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try makeCache(scratch, clock: clock)
        let compute = Computation()
        _ = try await cache.memoized(forKey: "k", timeToLive: .seconds(1_000)) { try await compute() }
        clock.advance(by: .seconds(500))
        // Refreshing 500 s early needs a draw of e^(-500 / compute time): never, even if a loaded
        // machine stretched the 20 ms computation to seconds.
        for _ in 0..<50 {
            _ = try await cache.memoized(forKey: "k", timeToLive: .seconds(1_000)) { try await compute() }
        }
        // A recomputation, had one been started, is over (or running) once none is in flight.
        try await eventually { cache.refreshesInFlight.load(ordering: .relaxed) == 0 }
        #expect(compute.runs.load(ordering: .relaxed) == 1)
        clock.advance(by: .seconds(500))
        #expect(try await cache.memoized(forKey: "k", timeToLive: .seconds(1_000)) { try await compute() } == "v2")
    }

    @Test("near expiry one caller's hit starts one background recomputation; everyone gets the old value meanwhile")
    func earlyRefresh() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try makeCache(scratch, clock: clock)
        let compute = Computation(gated: true)
        _ = try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { try await compute() }
        clock.advance(by: .seconds(9.99))
        // beta 10^6: the probability of not refreshing 10 ms before expiry is below 10^-7.
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await cache.memoized(forKey: "k", timeToLive: .seconds(10), beta: 1e6) { try await compute() }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "v1", count: 8))
        #expect(compute.finished.load(ordering: .relaxed) == 1, "callers waited for the recomputation")
        compute.release()
        // The refresh stores on disk, then in memory: wait for both (a read in between is served
        // the old value from memory, as any read concurrent with a store may be).
        try await eventually { try await cache.value(forKey: "k") == "v2" }
        #expect(try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { try await compute() } == "v2")
        // Every caller that drew a refresh started one; all have ended, the claim let one compute.
        try await eventually { cache.refreshesInFlight.load(ordering: .relaxed) == 0 }
        #expect(compute.runs.load(ordering: .relaxed) == 2)
    }

    @Test("a failing computation on a miss is thrown and stores nothing; a failing refresh keeps the value")
    func failures() async throws {
        struct Failure: Error {}
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let logs = RecordingLogHandler.Records()
        let cache = try makeCache(scratch, clock: clock, logs: logs)
        await #expect(throws: Failure.self) {
            try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { throw Failure() }
        }
        #expect(try await cache.disk.data(forKey: "k") == nil)
        let compute = Computation()
        _ = try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { try await compute() }
        clock.advance(by: .seconds(9.99))
        #expect(try await cache.memoized(forKey: "k", timeToLive: .seconds(10), beta: 1e6) { throw Failure() } == "v1")
        // The refresh has failed (and logged it) before the value is read again.
        try await eventually { logs.all.contains { $0.message.hasPrefix("early recomputation failed") } }
        try await eventually { cache.refreshesInFlight.load(ordering: .relaxed) == 0 }
        #expect(try await cache.memoized(forKey: "k", timeToLive: .seconds(10)) { try await compute() } == "v1")
    }
}
