import StowageCore
import Synchronization

/// The request total sampled about once a second (``StatusSampler``), so the status page can
/// give requests per second over the last few seconds, as `varnishstat` shows rates beside
/// its totals.
final class RequestRate: Sendable {
    /// How many samples are kept: enough for the longest window asked for.
    let capacity: Int
    private let samples: Mutex<[Sample]>

    /// The request total at one instant.
    struct Sample: Sendable {
        var requests: Int
        var at: ContinuousClock.Instant
    }

    init(capacity: Int = 16) {
        precondition(capacity > 1, "capacity needs to be > 1")
        self.capacity = capacity
        samples = Mutex([])
    }

    func sample(requests: Int, at instant: ContinuousClock.Instant) {
        samples.withLock { samples in
            samples.append(Sample(requests: requests, at: instant))
            if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        }
    }

    /// Requests per second from the newest sample at least `window` before `now` (or the
    /// oldest, when none is that old) to `now`, with the seconds that covers; `nil` before the
    /// first sample, or when the samples are younger than a tenth of a second.
    func perSecond(
        requests: Int,
        at now: ContinuousClock.Instant,
        over window: Duration
    ) -> (perSecond: Double, seconds: Double)? {
        let from = samples.withLock { samples in
            samples.last { now - $0.at >= window } ?? samples.first
        }
        guard let from else { return nil }
        let seconds = (now - from.at).timeInterval
        guard seconds >= 0.1 else { return nil }
        return (Double(max(0, requests - from.requests)) / seconds, seconds)
    }
}
