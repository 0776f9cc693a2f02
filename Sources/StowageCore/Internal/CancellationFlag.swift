import Synchronization

/// A flag that an async caller's cancellation handler sets and a blocking loop polls, with an
/// optional time limit the same checks enforce.
package final class CancellationFlag: Sendable {
    private let isSet = Atomic<Bool>(false)
    /// The time limit the checks enforce, if any.
    package let deadline: Deadline?
    /// A flag whose cancellation this one shares.
    private let parent: CancellationFlag?

    /// A flag without a time limit.
    package init() {
        deadline = nil
        parent = nil
    }

    /// A flag whose checks also throw ``TimeLimitReached`` once `timeLimit` has passed on
    /// `clock`, counted from now; `nil` sets no limit.
    package init(timeLimit: Duration?, clock: any Clock<Duration>) {
        deadline = timeLimit.map { Deadline(after: $0, on: clock) }
        parent = nil
    }

    /// A flag cancelled with `parent`, that also enforces `deadline`: one phase of a job under
    /// a time limit, while the job's other phases check `parent` alone.
    package init(parent: CancellationFlag, deadline: Deadline?) {
        self.deadline = deadline
        self.parent = parent
    }

    /// Asks the blocking work to stop at its next check.
    package func cancel() { isSet.store(true, ordering: .relaxed) }

    /// Whether ``cancel()`` has been called.
    package var isCancelled: Bool { isSet.load(ordering: .relaxed) || parent?.isCancelled == true }

    /// Whether the time limit has passed.
    package var isPastTimeLimit: Bool { deadline?.isPast ?? false }

    /// Throws `CancellationError` once ``cancel()`` has been called, ``TimeLimitReached`` once
    /// the time limit has passed.
    package func check() throws {
        if isCancelled { throw CancellationError() }
        if isPastTimeLimit { throw TimeLimitReached() }
    }
}

/// Thrown by a ``CancellationFlag`` check once its time limit has passed: the work stops
/// between two entries and reports what it did.
package struct TimeLimitReached: Error {}

/// A moment on some clock, a time limit away from when it was made.
package struct Deadline: Sendable {
    /// The time left; zero or less once it has passed.
    package let remaining: @Sendable () -> Duration

    /// The deadline `limit` from now on `clock`.
    package init(after limit: Duration, on clock: any Clock<Duration>) {
        remaining = Self.countdown(limit, clock)
    }

    private static func countdown<C: Clock<Duration>>(_ limit: Duration, _ clock: C) -> @Sendable () -> Duration {
        let end = clock.now.advanced(by: limit)
        return { clock.now.duration(to: end) }
    }

    /// Whether it has passed.
    package var isPast: Bool { remaining() <= .zero }
}
