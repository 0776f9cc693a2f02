import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// The collapse timeout follows the injected wait clock.
@Suite struct RequestCollapserClockTests {
    @Test(
        "a collapsed request times out when the injected clock passes the timeout, not before",
        .timeLimit(.minutes(5))
    )
    func timeoutFollowsTheClock() async throws {
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let flight = try #require(Self.lead("k", in: collapser))
        let waiting = Task { await collapser.wait(for: flight, timeout: .seconds(3_600)) }
        try await eventually { clock.sleeperCount == 1 }
        #expect(clock.sleeperCount == 1, "the timeout sleeps on the injected clock")
        clock.advance(by: .seconds(3_599))
        // An advance wakes the sleepers it reaches before it returns: one still asleep now has
        // not timed out, and the wait ends only through its timeout or the leader.
        #expect(clock.sleeperCount == 1, "not yet")
        clock.advance(by: .seconds(1))
        #expect(clock.sleeperCount == 0, "the timeout's sleep ended")
        // Were the timeout ignored, the time limit cancels the test: then end the wait (as the
        // leader would), so the test fails instead of hanging.
        let timedOut = await withTaskCancellationHandler {
            await waiting.value
        } onCancel: {
            collapser.finish(flight, stored: true)
        }
        #expect(timedOut == false, "timed out: fetch on its own")
        collapser.finish(flight, stored: false)
    }

    @Test("a leader that finishes wakes its waiters; the timer ends at its deadline with no one to time out")
    func finishWakesTheWaiters() async throws {
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let flight = try #require(Self.lead("k", in: collapser))
        let waiting = Task { await collapser.wait(for: flight, timeout: .seconds(60)) }
        try await eventually { collapser.waiterCount == 1 }
        collapser.finish(flight, stored: true)
        #expect(await waiting.value == true)
        #expect(collapser.waiterCount == 0)
        clock.advance(by: .seconds(60))
        #expect(clock.sleeperCount == 0, "the timer ended at its deadline")
    }

    @Test(
        "a thousand collapsed requests share one timer, and each times out at its own deadline",
        // A hang catcher: beside the whole suite and a CPU hog this test read 66-90 s from start
        // to end (most of it waiting for a thread), alone 0.2 s.
        .timeLimit(.minutes(5))
    )
    func waitersShareOneTimer() async throws {
        // A sleep per waiter, cancelled when its leader finishes, stays in the runtime until its
        // deadline (Swift's Task.sleep keeps its wake-up task and dispatch timer): 1,000 followers
        // a second would keep 5,000 of them for a 5 s timeout.
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let flights = (0..<1_000).compactMap { Self.lead("k\($0)", in: collapser) }
        #expect(flights.count == 1_000)
        // Half of them a second later, with a deadline a second later. Waited for by polling, not
        // by yielding after each one: beside a busy suite a yield waits behind every other task,
        // and 1,000 of them took 90 s under a CPU hog.
        let firstHalf = Self.waitAll(flights[0..<500], in: collapser)
        try await eventually { collapser.waiterCount == 500 }
        clock.advance(by: .seconds(1))
        let secondHalf = Self.waitAll(flights[500...], in: collapser)
        try await eventually { collapser.waiterCount == 1_000 }
        // The timer's task starts asleep a moment after the first waiter registers.
        try await eventually { clock.sleeperCount > 0 }
        #expect(clock.sleeperCount == 1, "one timer for 1,000 waits")
        for flight in flights[0..<100] { collapser.finish(flight, stored: true) }
        clock.advance(by: .seconds(9))
        // The first 500 time out at 10 s (the 100 woken by their leader are gone); the others
        // wait on, with the same timer asleep until their own deadline.
        try await eventually { collapser.waiterCount == 500 }
        // The timer removes the waiters it timed out, then goes back to sleep: the advance below
        // must find it asleep (a stress run saw the count between the two).
        try await eventually { clock.sleeperCount > 0 }
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        let timedOut = await firstHalf.value + secondHalf.value
        #expect(timedOut == 900, "every waiter not woken by its leader timed out")
        #expect(collapser.waiterCount == 0)
        #expect(clock.sleeperCount == 0)
        for flight in flights { collapser.finish(flight, stored: false) }
    }

    @Test("a cancelled collapsed request stops waiting at once, leaving the flight to the others")
    func cancelledWaiterLeaves() async throws {
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let flight = try #require(Self.lead("k", in: collapser))
        let cancelled = Task { await collapser.wait(for: flight, timeout: .seconds(60)) }
        let other = Task { await collapser.wait(for: flight, timeout: .seconds(60)) }
        try await eventually { collapser.waiterCount == 2 }
        cancelled.cancel()
        #expect(await cancelled.value == false)
        #expect(collapser.waiterCount == 1)
        collapser.finish(flight, stored: true)
        #expect(await other.value == true)
    }

    @Test(
        "a waiter whose deadline comes before the running timer's wake-up times out at its own deadline; a zero timeout at once",
        .timeLimit(.minutes(5))
    )
    func earlierDeadlineWakesEarlier() async throws {
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let long = try #require(Self.lead("long", in: collapser))
        let short = try #require(Self.lead("short", in: collapser))
        let zero = try #require(Self.lead("zero", in: collapser))
        let longWait = Task { await collapser.wait(for: long, timeout: .seconds(60)) }
        try await eventually { collapser.waiterCount == 1 && clock.sleeperCount == 1 }
        // The timer sleeps until 60 s; this one must not wait that long.
        let shortWait = Task { await collapser.wait(for: short, timeout: .seconds(10)) }
        try await eventually { collapser.waiterCount == 2 }
        #expect(await collapser.wait(for: zero, timeout: .zero) == false, "a zero timeout times out at once")
        clock.advance(by: .seconds(10))
        #expect(await shortWait.value == false, "timed out at 10 s")
        #expect(collapser.waiterCount == 1, "the 60 s waiter waits on")
        clock.advance(by: .seconds(49))
        #expect(collapser.waiterCount == 1)
        clock.advance(by: .seconds(1))
        #expect(await longWait.value == false)
        try await eventually { clock.sleeperCount == 0 }
        for flight in [long, short, zero] { collapser.finish(flight, stored: false) }
    }

    @Test(
        "two thousand waiters joining, cancelled and timed out while the timer fires all end, and the timer with them",
        .timeLimit(.minutes(5))
    )
    func churnWhileTheTimerFires() async throws {
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let flight = try #require(Self.lead("k", in: collapser))
        let waits = (0..<2_000).map { index in
            Task {
                // A second's timeout for the even ones, a minute's for the odd.
                await collapser.wait(for: flight, timeout: .seconds(index.isMultiple(of: 2) ? 1 : 60))
            }
        }
        // Cancel every third while the clock passes the short deadlines and the timer fires.
        let cancelling = Task { for (index, wait) in waits.enumerated() where index % 3 == 0 { wait.cancel() } }
        for _ in 0..<4 {
            clock.advance(by: .milliseconds(500))
            await Task.yield()
        }
        await cancelling.value
        // Those still waiting (joined late, or with a minute's timeout) wait for the leader.
        collapser.finish(flight, stored: true)
        for wait in waits { _ = await wait.value }
        #expect(collapser.waiterCount == 0)
        clock.advance(by: .seconds(120))
        try await eventually { clock.sleeperCount == 0 }
    }

    /// Waits on each of `flights` with a 10 s timeout, all at once; the task's value is how many
    /// timed out.
    static func waitAll(
        _ flights: ArraySlice<RequestCollapser.Flight>,
        in collapser: RequestCollapser
    ) -> Task<Int, Never> {
        Task {
            await withTaskGroup(of: Bool.self) { group in
                for flight in flights { group.addTask { await collapser.wait(for: flight, timeout: .seconds(10)) } }
                return await group.reduce(into: 0) { $0 += $1 ? 0 : 1 }
            }
        }
    }

    /// The flight `collapser` lets the caller lead for `key`, `nil` when it would follow.
    static func lead(_ key: String, in collapser: RequestCollapser) -> RequestCollapser.Flight? {
        guard case .leader(let flight) = collapser.join(key, startedAt: 0) else { return nil }
        return flight
    }
}
