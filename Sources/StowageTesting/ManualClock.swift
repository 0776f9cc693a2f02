import Foundation
import StowageCore
import Synchronization

/// A wall clock a test moves by hand: pass ``cacheClock`` wherever Stowage takes a
/// `clock: CacheClock` (expiry, age limits, purge policies) and ``advance(by:)`` it instead of
/// sleeping. It counts how often the cache read it, for tests of how often a hot path asks.
public final class ManualClock: Sendable {
    private let state: Mutex<(time: Date, reads: Int)>

    /// A clock showing `start` (by default a fixed date in 2027, so runs repeat exactly).
    public init(startingAt start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex((start, 0))
    }

    /// The clock to hand to a cache; each read counts in ``reads``.
    public var cacheClock: CacheClock {
        CacheClock {
            self.state.withLock { state in
                state.reads += 1
                return state.time
            }
        }
    }

    /// The time the clock shows (not counted as a read).
    public var now: Date { state.withLock { $0.time } }

    /// ``now`` in seconds since 1970, as HTTP dates and the RFC 9111 rules count time.
    public var secondsSince1970: Double { now.timeIntervalSince1970 }

    /// How often ``cacheClock`` was read.
    public var reads: Int { state.withLock { $0.reads } }

    /// Moves the time forward (or back, for a negative duration).
    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        state.withLock { $0.time += Double(seconds) + Double(attoseconds) / 1e18 }
    }
}
