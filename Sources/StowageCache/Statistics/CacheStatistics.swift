/// Counters of one cache since it was created.
///
/// The same figures go to swift-metrics (see `CacheCounters`), so a server's Prometheus or
/// StatsD backend sees them without polling this.
public struct CacheStatistics: Sendable, Hashable, Codable {
    /// Lookups that found a live value.
    public var hits: Int = 0
    /// Lookups that found nothing, or only an expired value.
    public var misses: Int = 0
    /// Values stored.
    public var writes: Int = 0
    /// Entries removed by the cache itself (limits, expiry, memory pressure), not by the caller.
    public var evictions: Int = 0
    /// Values found damaged on read (checksum mismatch, wrong length, replaced by a link, a
    /// FIFO or another non-regular file) and removed; each also counts as a miss.
    public var damaged: Int = 0
    /// Bytes of the values returned by hits (for a memory tier, the entries' costs).
    public var bytesRead: Int64 = 0
    /// Bytes of the values stored (for a memory tier, the entries' costs).
    public var bytesWritten: Int64 = 0
    /// Bytes of the entries the cache evicted by itself.
    public var bytesEvicted: Int64 = 0

    /// Zero counters.
    public init() {}

    /// Hits divided by lookups, `0` before the first lookup.
    public var hitRate: Double {
        let lookups = hits + misses
        return lookups == 0 ? 0 : Double(hits) / Double(lookups)
    }
}
