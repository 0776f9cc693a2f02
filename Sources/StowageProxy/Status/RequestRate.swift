import StowageCore
import Synchronization

/// The request total sampled about once a second (``StatusSampler``), so the status page can
/// give requests per second over the last few seconds, as `varnishstat` shows rates beside
/// its totals.
final class RequestRate: Sendable {
    /// How many samples are kept: enough for the longest window asked for.
    let capacity: Int
    /// What the samples are timed by, and what ``StatusSampler`` paces them by.
    let clock: ElapsedClock
    private let samples: Mutex<[Sample]>

    /// The request total at one moment.
    struct Sample: Sendable {
        var requests: Int
        /// When, on ``RequestRate/clock``.
        var at: Duration
    }

    /// A rate keeping `capacity` samples, timed by `clock` (real time by default; tests pass a
    /// `SteppedClock`).
    init(capacity: Int = 16, clock: ElapsedClock = .continuous) {
        precondition(capacity > 1, "capacity needs to be > 1")
        self.capacity = capacity
        self.clock = clock
        samples = Mutex([])
    }

    /// How many samples are kept now.
    var sampleCount: Int { samples.withLock { $0.count } }

    /// Records the request total `requests` now.
    func sample(requests: Int) {
        let now = clock.now
        samples.withLock { samples in
            samples.append(Sample(requests: requests, at: now))
            if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        }
    }

    /// Requests per second from the newest sample at least `window` old (or the oldest, when
    /// none is that old) to now, when the total is `requests`, with the seconds that covers;
    /// `nil` before the first sample, or when the samples are younger than a tenth of a second.
    func perSecond(requests: Int, over window: Duration) -> (perSecond: Double, seconds: Double)? {
        let now = clock.now
        let from = samples.withLock { samples in
            samples.last { now - $0.at >= window } ?? samples.first
        }
        guard let from else { return nil }
        let seconds = (now - from.at).timeInterval
        guard seconds >= 0.1 else { return nil }
        return (Double(max(0, requests - from.requests)) / seconds, seconds)
    }
}
