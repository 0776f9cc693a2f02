import Metrics
import Synchronization

/// Hit, miss, write and eviction counters of one cache, kept locally (for ``statistics``)
/// and reported through swift-metrics.
///
/// Metric names (counters), each with the dimensions `cache` (the cache's name) and `tier`
/// (`memory` or `disk`):
/// - `stowage_cache_hits_total`, `stowage_cache_misses_total`, `stowage_cache_writes_total`
/// - `stowage_cache_evictions_total`, with a `reason` dimension (see ``EvictionReason``)
///
/// Without a bootstrapped metrics backend, swift-metrics' no-op handlers make this cost a few
/// nanoseconds per operation.
package final class CacheCounters: Sendable {
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let writes = Atomic<Int>(0)
    private let evictions = Atomic<Int>(0)
    private let damaged = Atomic<Int>(0)
    private let damagedCounter: Counter
    private let hitCounter: Counter
    private let missCounter: Counter
    private let writeCounter: Counter
    private let evictionCounters: [EvictionReason: Counter]

    /// Counters for the cache `name` on `tier` (`"memory"` or `"disk"`).
    package init(name: String, tier: String) {
        let dimensions = [("cache", name), ("tier", tier)]
        hitCounter = Counter(label: "stowage_cache_hits_total", dimensions: dimensions)
        missCounter = Counter(label: "stowage_cache_misses_total", dimensions: dimensions)
        writeCounter = Counter(label: "stowage_cache_writes_total", dimensions: dimensions)
        damagedCounter = Counter(label: "stowage_cache_damaged_total", dimensions: dimensions)
        var evictionCounters: [EvictionReason: Counter] = [:]
        for reason in [EvictionReason.countLimit, .costLimit, .expired, .memoryPressure] {
            evictionCounters[reason] = Counter(
                label: "stowage_cache_evictions_total",
                dimensions: dimensions + [("reason", reason.rawValue)]
            )
        }
        self.evictionCounters = evictionCounters
    }

    package func recordHit() {
        hits.add(1, ordering: .relaxed)
        hitCounter.increment()
    }

    package func recordMiss() {
        misses.add(1, ordering: .relaxed)
        missCounter.increment()
    }

    package func recordWrite(_ count: Int = 1) {
        writes.add(count, ordering: .relaxed)
        writeCounter.increment(by: Int64(count))
    }

    /// Counts entries the cache removed by itself; explicit removals are not evictions.
    package func recordEviction(_ reason: EvictionReason, count: Int = 1) {
        guard reason != .explicit, count > 0 else { return }
        evictions.add(count, ordering: .relaxed)
        evictionCounters[reason]?.increment(by: Int64(count))
    }

    /// Counts a value found damaged on read and removed.
    package func recordDamaged() {
        damaged.add(1, ordering: .relaxed)
        damagedCounter.increment()
    }

    package var statistics: CacheStatistics {
        var statistics = CacheStatistics()
        statistics.hits = hits.load(ordering: .relaxed)
        statistics.misses = misses.load(ordering: .relaxed)
        statistics.writes = writes.load(ordering: .relaxed)
        statistics.evictions = evictions.load(ordering: .relaxed)
        statistics.damaged = damaged.load(ordering: .relaxed)
        return statistics
    }
}
