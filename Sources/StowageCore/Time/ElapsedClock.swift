import Foundation

/// Any `Clock<Duration>` with its instants turned into time since the clock was wrapped, so a
/// component can keep deadlines in a table and sleep until one without being generic over the
/// clock its user chose.
///
/// Components that wait or time out take `any Clock<Duration>` (default `ContinuousClock()`) and
/// wrap it once; tests pass a `SteppedClock` and advance it instead of sleeping, so a timeout is an
/// event the test causes, not a race with real time on a loaded machine.
package struct ElapsedClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration, Duration?) async throws -> Void
    private let blockingSleeper: @Sendable (Duration) -> Void

    /// Wraps `clock`; its present moment is offset zero.
    package init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        sleeper = { offset, tolerance in
            try await clock.sleep(until: origin.advanced(by: offset), tolerance: tolerance)
        }
        if C.self == ContinuousClock.self || C.self == SuspendingClock.self {
            blockingSleeper = { duration in
                Thread.sleep(forTimeInterval: duration.timeInterval)
            }
        } else {
            // A test's clock moves when the test says: wait for its sleep on a task, holding
            // this thread (never a cooperative one: see ``sleepBlocking(for:)``).
            blockingSleeper = { duration in
                let woken = DispatchSemaphore(value: 0)
                Task {
                    try? await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
                    woken.signal()
                }
                woken.wait()
            }
        }
    }

    /// The real time, as `ContinuousClock` measures it.
    package static var continuous: ElapsedClock { ElapsedClock(ContinuousClock()) }

    /// Time since the clock was wrapped.
    package var now: Duration { elapsed() }

    /// Suspends until the clock shows `deadline` (time since it was wrapped); throws
    /// `CancellationError` when the task is cancelled, as `Task.sleep` does.
    package func sleep(until deadline: Duration, tolerance: Duration? = nil) async throws {
        try await sleeper(deadline, tolerance)
    }

    /// Suspends for `duration` on the clock.
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }

    /// Blocks the calling thread for `duration` on the clock: for synchronous work that polls
    /// (a lock another process holds). Call it on a thread of its own or a blocking lane, never
    /// on a cooperative thread: with a test's clock the wait is a task that must run meanwhile.
    package func sleepBlocking(for duration: Duration) {
        blockingSleeper(duration)
    }
}
