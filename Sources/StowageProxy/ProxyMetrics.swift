import Foundation
import Metrics
import StowageCore
import StowageHTTPCache

/// The proxy's swift-metrics instruments, made once and shared by the request handler and the
/// admin listener. With the admin listener on, `GET /metrics` shows them beside the cache's own
/// (`stowage_cache_*`):
///
/// | name | kind | labels |
/// |---|---|---|
/// | `stowage_proxy_responses_total` | counter | `outcome`: hit, miss, revalidated, stale, bypass |
/// | `stowage_proxy_upstream_errors_total` | counter | |
/// | `stowage_proxy_served_bytes_total` | counter | `source`: cache (hit, stale, revalidated) or upstream |
/// | `stowage_proxy_upstream_duration_seconds` | histogram | until the upstream's response head |
/// | `stowage_proxy_purges_total` | counter | `kind`: url, prefix, tag |
/// | `stowage_proxy_purged_entries_total` | counter | |
/// | `stowage_proxy_cache_bytes` | gauge | `tier`: memory, disk (read at each scrape) |
/// | `stowage_proxy_cache_entries` | gauge | disk entries, bodies and records (read at each scrape) |
///
/// The same events go to ``activity`` for the status page (`GET /status.json`), which needs no
/// metrics backend.
struct ProxyMetrics: Sendable {
    /// The proxy's own figures for the status page.
    let activity: ProxyActivity
    private let outcomes: [CacheOutcome: Counter]
    private let upstreamErrors: Counter
    private let servedFromCache: Counter
    private let servedFromUpstream: Counter
    private let upstreamDuration: Metrics.Timer
    private let purges: [PurgeKind: Counter]
    let purgedEntries: Counter
    private let memoryBytes: Gauge
    private let diskBytes: Gauge
    private let diskEntries: Gauge

    /// What an admin request removed by.
    enum PurgeKind: String, CaseIterable, Sendable {
        case url, prefix, tag
    }

    init(activity: ProxyActivity = ProxyActivity()) {
        self.activity = activity
        var outcomes: [CacheOutcome: Counter] = [:]
        for outcome in [CacheOutcome.hit, .miss, .revalidated, .stale, .bypass] {
            outcomes[outcome] = Counter(
                label: "stowage_proxy_responses_total",
                dimensions: [("outcome", outcome.rawValue)]
            )
        }
        self.outcomes = outcomes
        upstreamErrors = Counter(label: "stowage_proxy_upstream_errors_total")
        servedFromCache = Counter(label: "stowage_proxy_served_bytes_total", dimensions: [("source", "cache")])
        servedFromUpstream = Counter(label: "stowage_proxy_served_bytes_total", dimensions: [("source", "upstream")])
        upstreamDuration = Metrics.Timer(
            label: "stowage_proxy_upstream_duration_seconds",
            preferredDisplayUnit: .seconds
        )
        var purges: [PurgeKind: Counter] = [:]
        for kind in PurgeKind.allCases {
            purges[kind] = Counter(label: "stowage_proxy_purges_total", dimensions: [("kind", kind.rawValue)])
        }
        self.purges = purges
        purgedEntries = Counter(label: "stowage_proxy_purged_entries_total")
        memoryBytes = Gauge(label: "stowage_proxy_cache_bytes", dimensions: [("tier", "memory")])
        diskBytes = Gauge(label: "stowage_proxy_cache_bytes", dimensions: [("tier", "disk")])
        diskEntries = Gauge(label: "stowage_proxy_cache_entries")
    }

    func record(_ outcome: CacheOutcome) {
        outcomes[outcome]?.increment()
        activity.counters.record(outcome)
    }

    /// Counts one request the upstream failed (answered 502 or 504).
    func recordUpstreamError() {
        upstreamErrors.increment()
        activity.counters.recordUpstreamError()
    }

    /// Records how long one upstream exchange took, until its response head.
    func recordUpstreamDuration(_ duration: Duration, endedAt: ContinuousClock.Instant) {
        upstreamDuration.recordNanoseconds(duration.saturatingNanoseconds)
        activity.latencies.record(duration, endedAt: endedAt)
    }

    /// Counts `count` body bytes sent to a client for a response of `outcome`.
    func recordServed(_ count: Int, outcome: CacheOutcome) {
        guard count > 0 else { return }
        activity.counters.recordServed(count, outcome: outcome)
        switch outcome {
        case .hit, .stale, .revalidated: servedFromCache.increment(by: count)
        case .miss, .bypass: servedFromUpstream.increment(by: count)
        }
    }

    /// Counts one admin purge or ban of `target` (a URL, a URL prefix or a tag) and the stored
    /// responses it removed, and keeps it for the status page's recent list.
    func recordPurge(_ kind: PurgeKind, target: String, removed: Int, at time: Date) {
        purges[kind]?.increment()
        purgedEntries.increment(by: removed)
        activity.invalidations.record(kind, target: target, removed: removed, at: time)
    }

    /// Reads the cache's size into the gauges (before a scrape).
    func recordSize(of cache: HTTPCache) async {
        memoryBytes.record(cache.memoryUsage.rawValue)
        if let usage = try? await cache.diskUsage() {
            diskBytes.record(usage.size.rawValue)
            diskEntries.record(usage.count)
        }
    }
}
