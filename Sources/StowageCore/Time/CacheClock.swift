import Foundation

/// Where a cache reads the time from: the system clock, or a clock a test moves by hand.
///
/// Expiry and age limits compare wall-clock dates (a disk cache's dates outlive the process),
/// so the clock gives `Date`s. Tests inject a clock and advance it instead of sleeping:
///
/// ```swift
/// let time = Mutex(Date(timeIntervalSince1970: 0))
/// let clock = CacheClock { time.withLock { $0 } }
/// ```
public struct CacheClock: Sendable {
    /// The current time.
    public let now: @Sendable () -> Date

    /// A clock that reads `now`.
    public init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    /// The system's wall clock.
    public static let system = CacheClock { Date() }
}
