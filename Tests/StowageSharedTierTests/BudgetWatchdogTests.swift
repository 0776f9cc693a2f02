import Foundation
import StowageCore
import StowageRedis
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageSharedTier

/// The request budget is kept by one watchdog per breaker instead of a timer task per call: every
/// call still fails on time, the watchdog stops when nothing is in flight, and a call that
/// finishes as its budget runs out resumes its caller once.
///
/// The budget runs on a `SteppedClock` the tests advance: a call runs out of its budget when the
/// test moves the clock past its deadline, never earlier and never later, however loaded the
/// machine. No test here waits on real time but to catch a hang (minutes).
@Suite("Request budget: one watchdog bounds every call in flight")
struct BudgetWatchdogTests {
    // MARK: - Every call against a hung server fails on time

    @Test(
        "64 GETs to a server that never answers fail with .timeout exactly when their budget has passed on the budget clock; the watchdog then stops"
    )
    func hungServerCallsTimeOutOnTime() async throws {
        let budget = Duration.seconds(10)
        let clock = SteppedClock()
        let (server, tier) = try hungTier(namespace: "w1", budget: budget, clock: clock)
        defer {
            Task { await tier.shutdown() }
            server.stop()
        }
        let outcomes = Outcomes()
        func startCalls(_ indices: Range<Int>) {
            for index in indices {
                Task {
                    let start = clock.now
                    do {
                        _ = try await tier.entry(forKey: "k\(index)")
                        outcomes.append(index, start.duration(to: clock.now), nil)
                    } catch {
                        outcomes.append(index, start.duration(to: clock.now), error)
                    }
                }
            }
        }
        // Half the calls start half a budget after the others, while the watchdog sleeps towards
        // the first half's deadline: it must fail each half at its own deadline.
        startCalls(0..<32)
        try await eventually(timeout: .seconds(300)) { tier.breaker.callsInBudget == 32 }
        #expect(tier.breaker.isWatchdogRunning)
        clock.advance(by: budget / 2)
        startCalls(32..<64)
        try await eventually(timeout: .seconds(300)) { tier.breaker.callsInBudget == 64 }
        #expect(outcomes.count == 0, "a call failed before any budget had passed")

        clock.advance(by: budget / 2)
        try await eventually(timeout: .seconds(300)) { outcomes.count == 32 }
        #expect(tier.breaker.callsInBudget == 32)
        clock.advance(by: budget / 2)
        try await eventually(timeout: .seconds(300)) { outcomes.count == 64 }

        for (index, elapsed, error) in outcomes.all {
            let error = try #require(error as? RedisError, "GET \(index) to a hung server returned after \(elapsed)")
            #expect(error.code == .timeout)
            #expect(error.message.contains("did not answer GET within the shared tier's request budget"))
            #expect(elapsed == budget, "GET \(index) failed \(elapsed) after it began on the budget clock")
        }
        #expect(Set(outcomes.all.prefix(32).map(\.0)) == Set(0..<32), "the first half failed first")
        #expect(tier.isCircuitOpen)
        // The body tasks still wait for the server, but no caller does: the watchdog exits at its
        // next wake-up, a budget later.
        clock.advance(by: budget)
        try await eventually(timeout: .seconds(300)) { !tier.breaker.isWatchdogRunning }
    }

    // MARK: - The watchdog runs only while calls are in flight

    @Test("the watchdog starts with the first call and stops after the last, with calls that succeed")
    func watchdogStopsWhenIdle() async throws {
        let clock = SteppedClock()
        let budget = Duration.seconds(10)
        let watchdog = BudgetWatchdog(budget: budget, clock: ElapsedClock(clock))
        #expect(!watchdog.isWatching)
        let release = AsyncStream<Void>.makeStream()
        let call = Task {
            try await watchdog.within("GET") {
                await release.stream.first { _ in true }
                return 7
            }
        }
        // Until the watchdog task sleeps on the clock, it has not looked at the table: a call that
        // ended before its first look leaves it nothing to watch (it stops at once, which is
        // right, and was a flake here once under load).
        try await eventually(timeout: .seconds(300)) {
            watchdog.isWatching && watchdog.callsInFlight == 1 && clock.sleeperCount == 1
        }
        release.continuation.yield()
        #expect(try await call.value == 7)
        #expect(watchdog.callsInFlight == 0)
        // One more wake-up (at the finished call's deadline) finds the table empty; then none.
        #expect(watchdog.isWatching)
        clock.advance(by: budget)
        try await eventually(timeout: .seconds(300)) { !watchdog.isWatching }
        // A later call starts it again, and it stops again a budget after that call (the call
        // ends once the new watchdog task sleeps, for the same reason).
        let later = try await watchdog.within("GET") {
            try await eventually(timeout: .seconds(300)) { clock.sleeperCount == 1 }
            return 8
        }
        #expect(later == 8)
        #expect(watchdog.isWatching)
        clock.advance(by: budget)
        try await eventually(timeout: .seconds(300)) { !watchdog.isWatching }
    }

    // MARK: - A call that finishes at its deadline resumes its caller once

    @Test("1,000 calls whose bodies finish around their deadline each return once: their own value or .timeout")
    func callsAtTheDeadlineResumeOnce() async throws {
        let budget = Duration.milliseconds(20)
        let budgetClock = SteppedClock()
        let bodyClock = SteppedClock()
        let watchdog = BudgetWatchdog(budget: budget, clock: ElapsedClock(budgetClock))
        let bodiesFinished = Counter()
        var successes = 0
        var timeouts = 0
        // In waves of 100. Each body waits 1–40 ms on the body clock; the test moves the body
        // clock a millisecond at a time and, at 20 ms, the budget clock by the whole budget: the
        // bodies resumed just before race the watchdog on real threads for the same callers.
        // Debug builds (the tests) use a checked continuation, which traps on a second resume; a
        // lost resume leaves a caller waiting, caught by the wait below.
        for wave in 0..<10 {
            let outcomes = Outcomes()
            let base = bodyClock.now
            var bodyTimes: [Int: Int] = [:]
            for index in wave * 100..<(wave + 1) * 100 {
                let milliseconds = Int.random(in: 1...40)
                bodyTimes[index] = milliseconds
                Task {
                    do {
                        let value = try await watchdog.within("GET") {
                            try await bodyClock.sleep(until: base.advanced(by: .milliseconds(milliseconds)))
                            bodiesFinished.value.add(1, ordering: .relaxed)
                            return index
                        }
                        outcomes.append(index, .zero, value == index ? nil : TestFailure("\(index) got \(value)"))
                    } catch {
                        outcomes.append(index, .zero, error)
                    }
                }
            }
            try await eventually(timeout: .seconds(300)) {
                watchdog.callsInFlight == 100 && bodyClock.sleeperCount == 100
            }
            for millisecond in 1...40 {
                bodyClock.advance(by: .milliseconds(1))
                if millisecond == 20 {
                    budgetClock.advance(by: budget)
                    // Every call still in the table has run out; the ones whose bodies wait
                    // past 20 ms must all time out.
                    try await eventually(timeout: .seconds(300)) { watchdog.callsInFlight == 0 }
                }
            }
            try await eventually(timeout: .seconds(300)) { outcomes.count == 100 }
            #expect(Set(outcomes.all.map(\.0)).count == 100)
            for (index, _, error) in outcomes.all {
                if let error {
                    #expect((error as? RedisError)?.code == .timeout, "call \(index): \(error)")
                    timeouts += 1
                } else {
                    #expect(bodyTimes[index]! <= 20, "call \(index) succeeded though its body outlived the budget")
                    successes += 1
                }
            }
        }
        #expect(successes + timeouts == 1_000)
        #expect(timeouts > 0 && successes > 0, "\(successes) successes, \(timeouts) timeouts")
        #expect(watchdog.callsInFlight == 0)
        // The late bodies finish too, their results dropped.
        try await eventually(timeout: .seconds(300)) { bodiesFinished.value.load(ordering: .relaxed) == 1_000 }
        budgetClock.advance(by: budget)
        try await eventually(timeout: .seconds(300)) { !watchdog.isWatching }
    }

    // MARK: - Cancelling the breaker leaves no caller waiting

    @Test("cancel() while GETs wait on a server that never answers: every caller still returns with .timeout")
    func cancelDuringCallsLeavesNoCallerHanging() async throws {
        let budget = Duration.seconds(1)
        let clock = SteppedClock()
        let (server, tier) = try hungTier(namespace: "w2", budget: budget, clock: clock)
        defer {
            Task { await tier.shutdown() }
            server.stop()
        }
        let outcomes = Outcomes()
        for index in 0..<16 {
            Task {
                do {
                    _ = try await tier.entry(forKey: "k\(index)")
                    outcomes.append(index, .zero, nil)
                } catch {
                    outcomes.append(index, .zero, error)
                }
            }
        }
        try await eventually(timeout: .seconds(300)) { tier.breaker.callsInBudget == 16 }
        tier.breaker.cancel()
        clock.advance(by: budget)
        try await eventually(timeout: .seconds(300)) { outcomes.count == 16 }
        let codes = outcomes.all.map { ($0.2 as? RedisError)?.code }
        #expect(codes.allSatisfy { $0 == .timeout }, "\(codes)")
        clock.advance(by: budget)
        try await eventually(timeout: .seconds(300)) { !tier.breaker.isWatchdogRunning }
    }

    // MARK: - Helpers

    /// A tier on a `HungRedisServer`, its request budget `budget` on `clock`, its probes never
    /// due (their clock is never advanced), and the client's own timeouts far beyond the budget.
    private func hungTier(
        namespace: String,
        budget: Duration,
        clock: SteppedClock
    ) throws -> (HungRedisServer, RedisSharedTier) {
        let server = try HungRedisServer()
        var configuration = try RedisConfiguration(url: server.url)
        configuration.connectTimeout = .seconds(600)
        configuration.commandTimeout = .seconds(600)
        configuration.poolWaitTimeout = .seconds(600)
        var options = RedisSharedTier.Options()
        options.requestBudget = budget
        options.requestBudgetClock = clock
        options.probeClock = SteppedClock()
        let tier = try RedisSharedTier(
            client: RedisClient(configuration: configuration),
            namespace: namespace,
            options: options
        )
        return (server, tier)
    }
}

/// What each call returned, in the order the calls returned.
private final class Outcomes: Sendable {
    private let list = Mutex<[(Int, Duration, (any Error)?)]>([])

    func append(_ index: Int, _ elapsed: Duration, _ error: (any Error)?) {
        list.withLock { $0.append((index, elapsed, error)) }
    }

    var count: Int { list.withLock { $0.count } }
    var all: [(Int, Duration, (any Error)?)] { list.withLock { $0 } }
}

private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
