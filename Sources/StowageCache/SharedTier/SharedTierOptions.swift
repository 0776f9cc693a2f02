/// How a ``HybridCache`` uses its ``SharedCacheTier``.
public struct SharedTierOptions: Sendable {
    /// Longest a node holds a key's load lock; a loader that takes longer loses it (and its
    /// fenced write is refused) so a crashed node never blocks the others for long.
    public var loadLockLease: Duration = .seconds(30)
    /// Longest a node waits for another node's load before it loads itself.
    public var loadWaitTimeout: Duration = .seconds(10)
    /// First pause between polls of the shared level while another node loads; it doubles up
    /// to ``maximumPollInterval``.
    public var pollInterval: Duration = .milliseconds(5)
    /// Longest pause between polls.
    public var maximumPollInterval: Duration = .milliseconds(100)
    /// Whether an invalidation also removes the disk copy (not only the memory copy). On by
    /// default: a disk copy that outlives an overwrite elsewhere would be served stale.
    public var invalidatesDisk = true

    public init() {}
}
