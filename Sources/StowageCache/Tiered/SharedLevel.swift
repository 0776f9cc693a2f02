import Foundation
import Logging
import StowageCore
import Synchronization

/// The shared level behind a ``CacheLevels``' memory and disk, and what a node must remember
/// about it: whether it answers (``SharedTierHealth``), the changes it missed during an outage
/// (``PendingSharedWrites``), since when this node has heard every invalidation
/// (``InvalidationHorizon``), and its subscription to the invalidations other nodes send.
///
/// ``CacheLevels`` reads, writes, removes and applies invalidations through it
/// (`CacheLevels+Shared.swift`), so ``HybridCache`` and the HTTP cache share one implementation
/// of the outage replay, the disk-copy confirmation and the fill-versus-invalidation re-check.
package final class SharedLevel: Sendable {
    /// What a replayed write sends for a key, from the disk copy's bytes and remaining lifetime;
    /// `nil` removes the key from the shared level instead (nothing of it may be shared).
    package typealias SharedCopy =
        @Sendable (_ key: String, _ data: Data, _ timeToLive: Duration?) -> (data: Data, timeToLive: Duration?)?

    /// The level itself.
    package let tier: any SharedCacheTier
    /// Whether it answers; failed calls are logged once per outage and counted.
    package let health: SharedTierHealth
    /// Hits and misses of reads that reached it.
    package let counters: CacheCounters
    /// Disk copies stored before it are confirmed against the shared level before use.
    let horizon: InvalidationHorizon
    /// Changes the shared level did not take (it was down), sent when it answers again.
    let pendingWrites: PendingSharedWrites
    /// The subscription made with the level (when the cache is created), until the first run
    /// takes it: what other nodes send before that run is buffered by the tier, not missed.
    private let firstSubscription: Mutex<AsyncStream<SharedCacheInvalidation>?>
    /// Whether an invalidation also removes the disk copy.
    let invalidatesDisk: Bool
    /// Whether disk copies older than the horizon are confirmed before use.
    let confirmsDiskCopies: Bool
    /// What a replayed write sends; `nil` sends the disk copy as it is.
    let sharedCopy: SharedCopy?
    /// Whether a replay of ``pendingWrites`` is under way (one at a time).
    let replaying = Atomic<Bool>(false)
    /// How many replays returned at once because another was under way: the event a test
    /// waits for to know a recovery's replay met one still running.
    package let replaysFoundUnderWay = Atomic<Int>(0)
    /// Set while a replay the shared level refused part-way waits to be tried again
    /// (`CacheLevels.replaySharedWrites`); the pause before it, in milliseconds, doubles up to 5 s.
    let replayRetryScheduled = Atomic<Bool>(false)
    let replayRetryMilliseconds = Atomic<Int>(100)
    /// Whether "too many pending writes" was logged in this outage.
    let overflowLogged = Atomic<Bool>(false)
    let name: String
    let logger: Logger
    /// The disk cache's clock: it dates disk copies, so it measures the horizon and lifetimes.
    let clock: CacheClock
    /// What the pauses between replays of missed writes are measured by (``SharedTierOptions/waitClock``).
    let waitClock: ElapsedClock

    /// The level `tier`, used as `options` say, for the cache `name` whose disk copies are
    /// dated by `clock`.
    ///
    /// - Parameter sharedCopy: What a replayed write sends for a disk copy (a cache that shares
    ///   only part of what it stores filters it here); `nil` sends the copy as it is.
    package init(
        tier: any SharedCacheTier,
        options: SharedTierOptions,
        name: String,
        logger: Logger,
        clock: CacheClock,
        sharedCopy: SharedCopy? = nil
    ) {
        self.tier = tier
        self.name = name
        self.logger = logger
        self.clock = clock
        waitClock = ElapsedClock(options.waitClock)
        self.sharedCopy = sharedCopy
        health = SharedTierHealth(name: name, logger: logger, now: clock.now)
        counters = CacheCounters(name: name, tier: "shared")
        horizon = InvalidationHorizon(clock: clock)
        pendingWrites = PendingSharedWrites(limit: options.maximumPendingWrites)
        firstSubscription = Mutex(tier.invalidations())
        invalidatesDisk = options.invalidatesDisk
        confirmsDiskCopies = options.confirmsDiskCopies
    }

    /// Other nodes' invalidations: the subscription made at creation for the first run
    /// (`isFirst`), a new one for each later run.
    func subscribe() -> (invalidations: AsyncStream<SharedCacheInvalidation>, isFirst: Bool) {
        if let first = firstSubscription.withLock({ $0.take() }) { return (first, true) }
        return (tier.invalidations(), false)
    }

    /// Keys whose latest write or removal the shared level has not taken yet.
    package var pendingCount: Int { pendingWrites.waitingCount }

    /// After a write, removal or ban through the shared level: forget an older pending change
    /// when the shared level took it, or keep it for the replay when it did not.
    ///
    /// - Returns: Whether the change was kept (the caller then schedules a replay).
    @discardableResult
    func settleOrKeep(_ change: PendingSharedWrites.Change, forKey key: String, taken: Bool) -> Bool {
        if taken {
            pendingWrites.settle(key, isPrefix: change == .ban)
            return false
        }
        let full = pendingWrites.waitingCount >= pendingWrites.limit
        if pendingWrites.record(change, forKey: key) {
            if full, change == .ban, !overflowLogged.exchange(true, ordering: .relaxed) {
                logger.warning(
                    """
                    too many changes waiting for the shared level; bans past the limit are sent as one ban of \
                    every key, further writes and removals stay local until they expire
                    """,
                    metadata: ["cache": "\(name)", "limit": "\(pendingWrites.limit)"]
                )
            }
            return true
        }
        if !overflowLogged.exchange(true, ordering: .relaxed) {
            logger.warning(
                "too many changes waiting for the shared level; further ones stay local until they expire",
                metadata: ["cache": "\(name)", "limit": "\(pendingWrites.limit)"]
            )
        }
        return false
    }
}

/// What the shared level holds for a key, telling "nothing there" from "could not ask".
package enum SharedLookup<Found: Sendable>: Sendable {
    /// The shared level has it.
    case found(Found)
    /// The shared level has no value (or none this node can read): a local copy is stale.
    case absent
    /// The shared level did not answer (recorded by ``SharedTierHealth``): nothing is known.
    case unreachable
}
