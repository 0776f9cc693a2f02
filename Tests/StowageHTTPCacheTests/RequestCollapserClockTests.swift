import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// The collapse timeout follows the injected wait clock.
@Suite struct RequestCollapserClockTests {
    @Test(
        "a collapsed request times out when the injected clock passes the timeout, not before",
        .timeLimit(.minutes(1))
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

    @Test("a leader that finishes wakes its waiters and their timeouts stop sleeping")
    func finishCancelsTheTimeout() async throws {
        let clock = SteppedClock()
        let collapser = RequestCollapser(clock: clock)
        let flight = try #require(Self.lead("k", in: collapser))
        let waiting = Task { await collapser.wait(for: flight, timeout: .seconds(60)) }
        try await eventually { clock.sleeperCount == 1 }
        collapser.finish(flight, stored: true)
        #expect(await waiting.value == true)
        try await eventually { clock.sleeperCount == 0 }
        #expect(clock.sleeperCount == 0, "the cancelled timeout left the clock")
    }

    /// The flight `collapser` lets the caller lead for `key`, `nil` when it would follow.
    static func lead(_ key: String, in collapser: RequestCollapser) -> RequestCollapser.Flight? {
        guard case .leader(let flight) = collapser.join(key, startedAt: 0) else { return nil }
        return flight
    }
}
