import Foundation
import NIOPosix
import StowageCore

/// `async-hop.CANDIDATE`: nanoseconds for an async caller to have a tiny closure run elsewhere
/// and resume with its result — the tax every async disk API pays before any disk work. The
/// baseline `direct` is the same closure called in place; the ratio is the hop's cost in calls.
///
/// Candidates: `dispatch` (``BlockingWork``'s pool, what every async disk API uses
/// for long work), `dispatch-concurrent` (a concurrent `DispatchQueue`, what it used before), `nio-thread-pool`
/// (`NIOThreadPool.runIfActive`, two threads), `task-executor` (`withTaskExecutorPreference` on
/// two dedicated threads), `inline` (an `async` function that does the work on the caller's
/// thread: what `DiskCache.data(forKey:)` does for an inline value).
struct AsyncHopScenario: Scenario {
    enum Candidate: String, Sendable, CaseIterable {
        case blockingWork = "dispatch", dispatchConcurrent = "dispatch-concurrent", nioThreadPool = "nio-thread-pool"
        case taskExecutor = "task-executor", inline
    }

    let candidate: Candidate
    var name: String { "async-hop.\(candidate.rawValue)" }
    static let all: [any Scenario] = Candidate.allCases.map { AsyncHopScenario(candidate: $0) }

    private static let queue = DispatchQueue(label: "bench.async-hop", attributes: .concurrent)
    private static let executor = DedicatedThreadExecutor(threads: 2)

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let rounds = 20_000
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let clock = ContinuousClock()
        var times: [Double] = []
        var sum = 0
        for _ in 0..<max(context.iterations, 3) {
            let start = clock.now
            for round in 0..<rounds { sum &+= try await hop(round, pool: pool) }
            times.append(Subprocess.seconds(clock.now - start) / Double(rounds) * 1e9)
        }
        try await pool.shutdownGracefully()
        var directTimes: [Double] = []
        for _ in 0..<max(context.iterations, 3) {
            let start = clock.now
            for round in 0..<rounds { sum &+= Self.work(round) }
            directTimes.append(Subprocess.seconds(clock.now - start) / Double(rounds) * 1e9)
        }
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: median(times),
            baselines: ["direct": median(directTimes)],
            ok: sum != 0,
            notes: "\(rounds) sequential round trips from one task, median of \(max(context.iterations, 3))"
        )
    }

    @inline(never)
    private static func work(_ value: Int) -> Int { value &* 31 &+ 7 }

    private func hop(_ value: Int, pool: NIOThreadPool) async throws -> Int {
        switch candidate {
        case .blockingWork:
            return await BlockingWork.run { Self.work(value) }
        case .dispatchConcurrent:
            return await withCheckedContinuation { continuation in
                Self.queue.async { continuation.resume(returning: Self.work(value)) }
            }
        case .nioThreadPool:
            return try await pool.runIfActive { Self.work(value) }
        case .taskExecutor:
            return await withTaskExecutorPreference(Self.executor) { await Self.asyncWork(value) }
        case .inline:
            return await Self.asyncWork(value)
        }
    }

    @inline(never)
    private static func asyncWork(_ value: Int) async -> Int { work(value) }
}
