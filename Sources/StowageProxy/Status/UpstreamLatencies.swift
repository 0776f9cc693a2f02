import Synchronization

/// The durations of the latest upstream exchanges (until the response head), for the status
/// page's mean and percentiles: a ring of the last ``capacity`` with when each ended.
///
/// Written once per upstream exchange, never on a hit; a few stores under a `Mutex`, with no
/// allocation once the ring is full.
final class UpstreamLatencies: Sendable {
    /// How many exchanges are kept.
    let capacity: Int
    private let ring: Mutex<Ring>

    private struct Ring {
        var samples: [Sample] = []
        var next = 0
    }

    /// One exchange: how long it took and when it ended, on `ContinuousClock`.
    struct Sample: Sendable {
        var duration: Duration
        var endedAt: ContinuousClock.Instant
    }

    init(capacity: Int = 1_024) {
        precondition(capacity > 0, "capacity needs to be > 0")
        self.capacity = capacity
        var ring = Ring()
        ring.samples.reserveCapacity(capacity)
        self.ring = Mutex(ring)
    }

    func record(_ duration: Duration, endedAt: ContinuousClock.Instant) {
        let sample = Sample(duration: duration, endedAt: endedAt)
        ring.withLock { ring in
            if ring.samples.count < capacity {
                ring.samples.append(sample)
            } else {
                ring.samples[ring.next] = sample
            }
            ring.next = (ring.next + 1) % capacity
        }
    }

    /// The durations of the kept exchanges that ended after `start`, in no particular order.
    func durations(since start: ContinuousClock.Instant) -> [Duration] {
        let samples = ring.withLock { $0.samples }
        return samples.filter { $0.endedAt > start }.map(\.duration)
    }
}
