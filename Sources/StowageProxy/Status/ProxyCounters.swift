import StowageHTTPCache
import Synchronization

/// The proxy's running totals for the status page (`GET /status.json`): one relaxed atomic
/// add per figure, so counting a hit takes no lock and allocates nothing (the hit path is
/// benchmarked), as nginx's `stub_status` counts with atomics in shared memory.
///
/// swift-metrics' counters feed Prometheus; these are the proxy's own, readable whatever
/// metrics backend the process has (none, by default).
final class ProxyCounters: Sendable {
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let revalidations = Atomic<Int>(0)
    private let staleHits = Atomic<Int>(0)
    private let bypasses = Atomic<Int>(0)
    private let upstreamErrorCount = Atomic<Int>(0)
    private let bytesFromCache = Atomic<Int>(0)
    private let bytesFromUpstream = Atomic<Int>(0)

    /// Counts one response served with `outcome`.
    func record(_ outcome: CacheOutcome) {
        switch outcome {
        case .hit: hits.add(1, ordering: .relaxed)
        case .miss: misses.add(1, ordering: .relaxed)
        case .revalidated: revalidations.add(1, ordering: .relaxed)
        case .stale: staleHits.add(1, ordering: .relaxed)
        case .bypass: bypasses.add(1, ordering: .relaxed)
        }
    }

    /// Counts one request the upstream failed (answered 502 or 504).
    func recordUpstreamError() { upstreamErrorCount.add(1, ordering: .relaxed) }

    /// Counts `count` body bytes sent to a client for a response of `outcome`.
    func recordServed(_ count: Int, outcome: CacheOutcome) {
        switch outcome {
        case .hit, .stale, .revalidated: bytesFromCache.add(count, ordering: .relaxed)
        case .miss, .bypass: bytesFromUpstream.add(count, ordering: .relaxed)
        }
    }

    /// The totals now. Each figure is read on its own: one taken while requests are answered
    /// may be a request ahead of another, as nginx's `stub_status` figures are.
    var snapshot: Snapshot {
        Snapshot(
            hits: hits.load(ordering: .relaxed),
            misses: misses.load(ordering: .relaxed),
            revalidations: revalidations.load(ordering: .relaxed),
            staleHits: staleHits.load(ordering: .relaxed),
            bypasses: bypasses.load(ordering: .relaxed),
            upstreamErrors: upstreamErrorCount.load(ordering: .relaxed),
            bytesFromCache: bytesFromCache.load(ordering: .relaxed),
            bytesFromUpstream: bytesFromUpstream.load(ordering: .relaxed)
        )
    }

    /// The totals at one moment.
    struct Snapshot: Sendable, Hashable {
        var hits = 0
        var misses = 0
        var revalidations = 0
        var staleHits = 0
        var bypasses = 0
        var upstreamErrors = 0
        var bytesFromCache = 0
        var bytesFromUpstream = 0

        /// Every request answered: each outcome and each upstream failure.
        var requests: Int { hits + misses + revalidations + staleHits + bypasses + upstreamErrors }
        /// Lookups the cache could answer from what it stores (every outcome but a bypass).
        var cacheableLookups: Int { hits + misses + revalidations + staleHits }
        /// Lookups answered from the cache without asking the upstream (fresh or stale).
        var cacheHits: Int { hits + staleHits }
    }
}
