import Synchronization

/// A clock that moves `step` forward every time it is read: a time limit of `n × step` runs out
/// after `n` checks, whatever the machine's speed, so tests of time budgets never sleep and never
/// depend on how fast the disk is.
public final class TickingClock: Clock, Sendable {
    /// A moment on the clock: the time since it was made.
    public typealias Instant = SteppedClock.Instant

    private let step: Duration
    private let state = Mutex(Duration.zero)

    /// A clock at zero that moves `step` per read of ``now``.
    public init(step: Duration) {
        self.step = step
    }

    /// The moment the clock shows; each read moves it `step` further.
    public var now: Instant {
        state.withLock {
            $0 += step
            return Instant(offset: $0)
        }
    }

    /// How many times the clock has been read.
    public var reads: Int { state.withLock { Int($0 / step) } }

    /// `step`.
    public var minimumResolution: Duration { step }

    /// Returns at once: time here moves by reading, not by waiting.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
    }
}
