import Metrics
import Synchronization

/// Hit, miss, write and eviction counters of one cache, kept locally (for ``statistics``)
/// and reported through swift-metrics.
///
/// Metric names (counters), each with the dimensions `cache` (the cache's name) and `tier`
/// (`memory` or `disk`):
/// - `stowage_cache_hits_total`, `stowage_cache_misses_total`, `stowage_cache_writes_total`
/// - `stowage_cache_evictions_total`, with a `reason` dimension (see ``EvictionReason``)
/// - `stowage_cache_bytes_read_total`, `stowage_cache_bytes_written_total`,
///   `stowage_cache_bytes_evicted_total` (a memory tier counts its entries' costs)
///
/// Without a bootstrapped metrics backend, swift-metrics' no-op handlers make this cost a few
/// nanoseconds per operation.
package final class CacheCounters: Sendable {
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let writes = Atomic<Int>(0)
    private let evictions = Atomic<Int>(0)
    private let damaged = Atomic<Int>(0)
    private let bytesRead = Atomic<Int64>(0)
    private let bytesWritten = Atomic<Int64>(0)
    private let bytesEvicted = Atomic<Int64>(0)
    private let bytesReadCounter: Counter
    private let bytesWrittenCounter: Counter
    private let bytesEvictedCounter: Counter
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
        bytesReadCounter = Counter(label: "stowage_cache_bytes_read_total", dimensions: dimensions)
        bytesWrittenCounter = Counter(label: "stowage_cache_bytes_written_total", dimensions: dimensions)
        bytesEvictedCounter = Counter(label: "stowage_cache_bytes_evicted_total", dimensions: dimensions)
        var evictionCounters: [EvictionReason: Counter] = [:]
        for reason in [EvictionReason.countLimit, .costLimit, .expired, .memoryPressure] {
            evictionCounters[reason] = Counter(
                label: "stowage_cache_evictions_total",
                dimensions: dimensions + [("reason", reason.rawValue)]
            )
        }
        self.evictionCounters = evictionCounters
    }

    /// Counts a hit that returned `bytes`.
    package func recordHit(bytes: Int = 0) {
        hits.add(1, ordering: .relaxed)
        hitCounter.increment()
        if bytes > 0 {
            Self.addSaturating(Int64(bytes), to: bytesRead)
            bytesReadCounter.increment(by: Int64(bytes))
        }
    }

    package func recordMiss() {
        misses.add(1, ordering: .relaxed)
        missCounter.increment()
    }

    /// Counts `count` values stored, of `bytes` together.
    package func recordWrite(_ count: Int = 1, bytes: Int64 = 0) {
        writes.add(count, ordering: .relaxed)
        writeCounter.increment(by: Int64(count))
        if bytes > 0 {
            Self.addSaturating(bytes, to: bytesWritten)
            bytesWrittenCounter.increment(by: bytes)
        }
    }

    /// Counts entries the cache removed by itself, of `bytes` together; explicit removals are
    /// not evictions.
    package func recordEviction(_ reason: EvictionReason, count: Int = 1, bytes: Int64 = 0) {
        guard reason != .explicit, count > 0 else { return }
        evictions.add(count, ordering: .relaxed)
        evictionCounters[reason]?.increment(by: Int64(count))
        if bytes > 0 {
            Self.addSaturating(bytes, to: bytesEvicted)
            bytesEvictedCounter.increment(by: bytes)
        }
    }

    /// Counts a value found damaged on read and removed.
    package func recordDamaged() {
        damaged.add(1, ordering: .relaxed)
        damagedCounter.increment()
    }

    /// Adds `bytes` to `total`, stopping at `Int64.max`: a memory tier counts its entries'
    /// costs, which may be as large as `Int.max` each, and an atomic `add` traps on overflow.
    private static func addSaturating(_ bytes: Int64, to total: borrowing Atomic<Int64>) {
        var current = total.load(ordering: .relaxed)
        while true {
            let (sum, overflow) = current.addingReportingOverflow(bytes)
            let (exchanged, original) = total.weakCompareExchange(
                expected: current,
                desired: overflow ? .max : sum,
                ordering: .relaxed
            )
            if exchanged { return }
            current = original
        }
    }

    package var statistics: CacheStatistics {
        var statistics = CacheStatistics()
        statistics.hits = hits.load(ordering: .relaxed)
        statistics.misses = misses.load(ordering: .relaxed)
        statistics.writes = writes.load(ordering: .relaxed)
        statistics.evictions = evictions.load(ordering: .relaxed)
        statistics.damaged = damaged.load(ordering: .relaxed)
        statistics.bytesRead = bytesRead.load(ordering: .relaxed)
        statistics.bytesWritten = bytesWritten.load(ordering: .relaxed)
        statistics.bytesEvicted = bytesEvicted.load(ordering: .relaxed)
        return statistics
    }
}
