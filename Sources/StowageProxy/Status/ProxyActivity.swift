import Foundation

/// What the proxy has done since it started, kept for the admin listener's status page
/// (`GET /status.json`, ``ProxyStatus``): totals by outcome and bytes (``ProxyCounters``,
/// atomics counted on the hit path), the request total sampled each second
/// (``RequestRate``), the latest upstream exchanges' durations (``UpstreamLatencies``) and the
/// latest purges and bans (``RecentInvalidations``).
final class ProxyActivity: Sendable {
    let counters = ProxyCounters()
    let rate = RequestRate()
    let latencies = UpstreamLatencies()
    let invalidations = RecentInvalidations()
    /// When the proxy was created, on `ContinuousClock` (for the uptime) and by the wall clock.
    let start: ContinuousClock.Instant
    let startDate: Date

    init(start: ContinuousClock.Instant = .now, startDate: Date = Date()) {
        self.start = start
        self.startDate = startDate
    }
}
