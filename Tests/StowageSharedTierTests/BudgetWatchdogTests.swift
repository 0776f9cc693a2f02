import Foundation
import StowageRedis
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageSharedTier

/// The request budget is kept by one watchdog per breaker instead of a timer task per call: every
/// call still fails on time, the watchdog stops when nothing is in flight, and a call that
/// finishes as its budget runs out resumes its caller once.
@Suite("Request budget: one watchdog bounds every call in flight")
struct BudgetWatchdogTests {
    // MARK: - Every call against a hung server fails on time

    @Test(
        "64 GETs to a server that never answers all fail with .timeout within budget + budget/8; the watchdog then stops"
    )
    func hungServerCallsTimeOutOnTime() async throws {
        let budget = Duration.seconds(10)
        let (server, tier) = try hungTier(namespace: "w1", budget: budget)
        defer {
            Task { await tier.shutdown() }
            server.stop()
        }
        // Half the calls start half a budget after the others, while the watchdog sleeps towards
        // the first half's deadlines: it must still fail them on time, not a wake-up later.
        let clock = ContinuousClock()
        let outcomes = try await withLimit(.seconds(60)) {
            try await withThrowingTaskGroup(of: (Duration, (any Error)?).self) { group in
                for index in 0..<64 {
                    group.addTask {
                        if index >= 32 { try await Task.sleep(for: budget / 2) }
                        let start = clock.now
                        do {
                            _ = try await tier.entry(forKey: "k\(index)")
                            return (start.duration(to: clock.now), nil)
                        } catch {
                            return (start.duration(to: clock.now), error)
                        }
                    }
                }
                try await eventually(timeout: .seconds(10)) { tier.breaker.isWatchdogRunning }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }

        // The bound: budget/8 is the watchdog's tolerance; 8 s more for the cooperative pool of a
        // 2-core machine running every other suite at once (1 s and 3 s were seen to be too
        // little, as other suites held the pool's threads). Here it proves no call hangs; how
        // close to the deadline calls fail is for a quiet run to show.
        let latest = budget + budget / 8 + .seconds(8)
        #expect(outcomes.count == 64)
        for (elapsed, error) in outcomes {
            let error = try #require(error as? RedisError, "a GET to a hung server returned after \(elapsed)")
            #expect(error.code == .timeout)
            #expect(error.message.contains("did not answer GET within the shared tier's request budget"))
            #expect(elapsed >= budget, "a call failed early, after \(elapsed)")
            #expect(elapsed <= latest, "a call failed \(elapsed) after it began; the bound is \(latest)")
        }
        #expect(tier.isCircuitOpen)
        // The body tasks still wait for the server, but no caller does: the watchdog exits at its
        // next wake-up (a budget later at most).
        try await eventually(timeout: .seconds(30)) { !tier.breaker.isWatchdogRunning }
    }

    // MARK: - The watchdog runs only while calls are in flight

    @Test("the watchdog starts with the first call and stops after the last, with calls that succeed")
    func watchdogStopsWhenIdle() async throws {
        // Long enough that the held call cannot run out of it on a loaded machine.
        let watchdog = BudgetWatchdog(budget: .seconds(10))
        #expect(!watchdog.isWatching)
        let release = AsyncStream<Void>.makeStream()
        let call = Task {
            try await watchdog.within("GET") {
                await release.stream.first { _ in true }
                return 7
            }
        }
        try await eventually(timeout: .seconds(10)) { watchdog.isWatching && watchdog.callsInFlight == 1 }
        release.continuation.yield()
        #expect(try await call.value == 7)
        #expect(watchdog.callsInFlight == 0)
        // One more wake-up (at the finished call's deadline) finds the table empty; then none.
        try await eventually(timeout: .seconds(30)) { !watchdog.isWatching }
        // A later call starts it again.
        #expect(try await watchdog.within("GET") { 8 } == 8)
        try await eventually(timeout: .seconds(30)) { !watchdog.isWatching }
    }

    // MARK: - A call that finishes at its deadline resumes its caller once

    @Test("1,000 calls whose bodies take about the budget each return once: their own value or .timeout")
    func callsAtTheDeadlineResumeOnce() async throws {
        let budget = Duration.milliseconds(20)
        let watchdog = BudgetWatchdog(budget: budget)
        let bodiesFinished = Counter()
        let clock = ContinuousClock()
        var successes = 0
        var timeouts = 0
        // In waves of 100, so the calls' deadlines fall at many different moments of the
        // watchdog's sleep. Debug builds (the tests) use a checked continuation, which traps on a
        // second resume; a lost resume hangs the wave, caught by the 60 s limit below.
        for wave in 0..<10 {
            let outcomes = try await withLimit(.seconds(60)) {
                await withTaskGroup(of: (Int, Result<Int, any Error>, Duration).self) { group in
                    for index in wave * 100..<(wave + 1) * 100 {
                        group.addTask {
                            let start = clock.now
                            do {
                                let value = try await watchdog.within("GET") {
                                    // 1–40 ms: some finish well inside the budget, some well after,
                                    // many within a millisecond or two of it.
                                    try await Task.sleep(for: .microseconds(Int.random(in: 1_000...40_000)))
                                    bodiesFinished.value.add(1, ordering: .relaxed)
                                    return index
                                }
                                return (index, .success(value), start.duration(to: clock.now))
                            } catch {
                                return (index, .failure(error), start.duration(to: clock.now))
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(outcomes.count == 100)
            #expect(Set(outcomes.map(\.0)).count == 100)
            for (index, result, elapsed) in outcomes {
                switch result {
                case .success(let value):
                    #expect(value == index)
                    successes += 1
                case .failure(let error):
                    #expect((error as? RedisError)?.code == .timeout)
                    #expect(elapsed >= budget, "call \(index) timed out early, after \(elapsed)")
                    timeouts += 1
                }
            }
        }
        #expect(successes + timeouts == 1_000)
        // On a quiet machine both kinds come back; with every suite running at once on 2 cores
        // the bodies may not even start within 20 ms, and all calls time out.
        #expect(timeouts > 0, "\(successes) successes, \(timeouts) timeouts")
        #expect(watchdog.callsInFlight == 0)
        // The late bodies finish too, their results dropped.
        try await eventually(timeout: .seconds(30)) { bodiesFinished.value.load(ordering: .relaxed) == 1_000 }
        try await eventually(timeout: .seconds(30)) { !watchdog.isWatching }
    }

    // MARK: - Cancelling the breaker leaves no caller waiting

    @Test("cancel() while GETs wait on a server that never answers: every caller still returns with .timeout")
    func cancelDuringCallsLeavesNoCallerHanging() async throws {
        let budget = Duration.seconds(1)
        let (server, tier) = try hungTier(namespace: "w2", budget: budget)
        defer {
            Task { await tier.shutdown() }
            server.stop()
        }
        let codes = try await withLimit(.seconds(60)) {
            try await withThrowingTaskGroup(of: RedisError.Code?.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        do {
                            _ = try await tier.entry(forKey: "k\(index)")
                            return nil
                        } catch {
                            return (error as? RedisError)?.code
                        }
                    }
                }
                try await eventually(timeout: .seconds(10)) { tier.breaker.isWatchdogRunning }
                tier.breaker.cancel()
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(codes.count == 16)
        #expect(codes.allSatisfy { $0 == .timeout }, "\(codes)")
        try await eventually(timeout: .seconds(30)) { !tier.breaker.isWatchdogRunning }
    }

    // MARK: - Helpers

    /// A tier on a `HungRedisServer`, its request budget `budget`, its probes never due (their
    /// clock is never advanced), and the client's own timeouts far beyond the budget.
    private func hungTier(namespace: String, budget: Duration) throws -> (HungRedisServer, RedisSharedTier) {
        let server = try HungRedisServer()
        var configuration = try RedisConfiguration(url: server.url)
        configuration.connectTimeout = .seconds(60)
        configuration.commandTimeout = .seconds(60)
        configuration.poolWaitTimeout = .seconds(60)
        var options = RedisSharedTier.Options()
        options.requestBudget = budget
        options.probeClock = SteppedClock()
        let tier = try RedisSharedTier(
            client: RedisClient(configuration: configuration),
            namespace: namespace,
            options: options
        )
        return (server, tier)
    }

    /// `body`'s result, or a `TestFailure` once `limit` has passed. `body` runs in a task of its
    /// own, not a child: a task group would wait for a hanging caller before it could report it.
    private func withLimit<T: Sendable>(
        _ limit: Duration,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Outcome<T>()
        Task {
            do {
                outcome.set(.success(try await body()))
            } catch {
                outcome.set(.failure(error))
            }
        }
        do {
            try await eventually(timeout: limit) { outcome.get() != nil }
        } catch {
            throw TestFailure("a caller was still waiting after \(limit)")
        }
        return try outcome.get()!.get()
    }
}

private final class Outcome<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)

    func set(_ value: Result<T, any Error>) { result.withLock { $0 = value } }
    func get() -> Result<T, any Error>? { result.withLock { $0 } }
}

private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
