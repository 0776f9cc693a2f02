import Foundation
import Logging
import StowageCore
import Synchronization

/// The shared level's part of ``HybridCache``: fall-through reads, invalidations from other
/// nodes, and loads coordinated across nodes.
extension HybridCache {
    /// Reads `key` from the shared level and, on a hit, fills disk and memory.
    func sharedValue(forKey key: String) async -> Value? {
        if case .found(let value) = await sharedLookup(forKey: key) { return value }
        return nil
    }

    /// Reads `key` from the shared level and, on a hit, fills disk and memory; bytes this node
    /// cannot decode (another node's newer format) read as `.absent`.
    ///
    /// An invalidation that arrives while the fill is under way may have removed the local
    /// copies before the fill wrote them; the fill then removes them itself, so a stale copy
    /// never outlives an invalidation (the value is still returned: it was current when read).
    func sharedLookup(forKey key: String) async -> SharedLookup<Value> {
        guard let shared else { return .absent }
        // The shared level has an older state of a key changed here during an outage.
        if pendingWrites.change(forKey: key) != nil { return .absent }
        let removalsBefore = levels.removalCount
        let entry: SharedCacheEntry
        switch await health.lookup(key, in: shared) {
        case .unreachable: return .unreachable
        case .absent:
            sharedCounters.recordMiss()
            return .absent
        case .found(let found): entry = found
        }
        sharedCounters.recordHit(bytes: entry.data.count)
        let value: Value
        do {
            value = try serializer.decode(entry.data)
        } catch {
            // Another node may run a newer format; leave its bytes alone and read a miss.
            disk.configuration.logger.warning(
                "shared bytes do not decode; reading a miss",
                metadata: ["key": "\(key)", "error": "\(error)"]
            )
            return .absent
        }
        do {
            try await storeLocally(value, data: entry.data, forKey: key, timeToLive: entry.timeToLive)
        } catch {
            disk.configuration.logger.warning(
                "could not keep a shared value on disk",
                metadata: ["key": "\(key)", "error": "\(error)"]
            )
        }
        if levels.removalCount != removalsBefore {
            await apply(.key(key))
        }
        return .found(value)
    }

    /// Checks a disk copy stored before the ``InvalidationHorizon`` against the shared level:
    /// the shared value replaces it (and is returned), or, when the shared level no longer has
    /// one, the copy is removed. `.unreachable` leaves the copy as it is, unchecked.
    func confirmDiskCopy(forKey key: String) async -> SharedLookup<Value> {
        let lookup = await sharedLookup(forKey: key)
        if case .absent = lookup {
            await levels.drop(key, reason: "a disk copy the shared level no longer has")
        }
        return lookup
    }

    /// Drops local copies another node made stale.
    package func apply(_ invalidation: SharedCacheInvalidation) async {
        // A gap beginning removes nothing: only confirmation is suspended.
        if invalidation == .interrupted { return horizon.apply(invalidation) }
        switch invalidation {
        case .key(let key):
            // Another write reached the shared level after this node's change of `key` failed
            // to: replaying that change would overwrite the newer value, or delete it when the
            // local copy it would send is dropped just below.
            pendingWrites.settle(key)
            await levels.drop(key, includingDisk: sharedOptions.invalidatesDisk, reason: "an invalidated disk copy")
        case .prefix(let prefix):
            await levels.drop(
                keysWithPrefix: prefix,
                includingDisk: sharedOptions.invalidatesDisk,
                reason: "banned disk copies"
            )
        case .all, .emptied:
            // Horizon first: a read that misses memory after the purge then confirms its disk
            // copy (after `.all`), or trusts it (after `.emptied`).
            horizon.apply(invalidation)
            levels.dropMemory()
            await replayPendingWrites()
        case .interrupted:
            break
        }
    }

    /// Loads `key` once across the fleet: take the key's lock and load, or wait for the node
    /// that holds it, or load anyway when the wait times out or the shared level is down.
    package func loadCoordinated(
        key: String,
        timeToLive: Duration?,
        shared: any SharedCacheTier,
        load: @Sendable () async throws -> Value
    ) async throws -> Value {
        try await loadCoordinated(
            key: key,
            timeToLive: timeToLive,
            shared: shared,
            clock: sharedOptions.waitClock,
            load: load
        )
    }

    /// ``loadCoordinated(key:timeToLive:shared:load:)`` with its waits measured by `clock`.
    private func loadCoordinated<C: Clock<Duration>>(
        key: String,
        timeToLive: Duration?,
        shared: any SharedCacheTier,
        clock: C,
        load: @Sendable () async throws -> Value
    ) async throws -> Value {
        let deadline = clock.now.advanced(by: sharedOptions.loadWaitTimeout)
        var reason = "timed out waiting for the node that holds the lock"
        // Times the lock was free yet no readable value there, in a row: once means the loader
        // failed (take over); twice, that the value there is one this node cannot read (another
        // node's newer format), which the lock is refused for.
        var freeWithoutValue = 0
        waiting: while clock.now < deadline {
            guard
                let acquired = await health.call(
                    "lock",
                    {
                        try await shared.lockForLoading(key: key, lease: sharedOptions.loadLockLease)
                    }
                )
            else {
                reason = "the shared level is down"
                break
            }
            if let lock = acquired {
                return try await loadHolding(lock, key: key, timeToLive: timeToLive, shared: shared, load: load)
            }
            if freeWithoutValue >= 2 {
                reason = "the shared value is one this node cannot read"
                break
            }
            // Another node is loading: poll until its value lands, its lock goes, or time runs out.
            var pause = sharedOptions.pollInterval
            while clock.now < deadline {
                try await clock.sleep(for: min(pause, clock.now.duration(to: deadline)))
                pause = min(pause * 2, sharedOptions.maximumPollInterval)
                if let value = await sharedValue(forKey: key) { return value }
                let isLocked = await health.call("lock-state") { try await shared.isLockedForLoading(key: key) }
                guard let isLocked else {
                    reason = "the shared level is down"
                    break waiting
                }
                if !isLocked {
                    // Released: the value may have landed just now; else the loader failed — take over.
                    if let value = await sharedValue(forKey: key) { return value }
                    freeWithoutValue += 1
                    break
                }
            }
        }
        disk.configuration.logger.notice(
            "loading without the fleet's lock",
            metadata: ["key": "\(key)", "reason": "\(reason)"]
        )
        let loaded = try await load()
        try await setValue(loaded, forKey: key, timeToLive: timeToLive)
        return loaded
    }

    private func loadHolding(
        _ lock: SharedCacheLoadLock,
        key: String,
        timeToLive: Duration?,
        shared: any SharedCacheTier,
        load: @Sendable () async throws -> Value
    ) async throws -> Value {
        let loaded: Value
        let data: Data
        do {
            loaded = try await load()
            data = try serializer.encode(loaded)
        } catch {
            _ = await health.call("unlock") { try await shared.unlock(lock) }
            throw error
        }
        try await storeLocally(loaded, data: data, forKey: key, timeToLive: timeToLive)
        let stored = await health.call("set") {
            try await shared.setData(data, forKey: key, timeToLive: timeToLive, releasing: lock)
        }
        if stored == nil {
            settleOrKeep(.set, forKey: key, taken: false)
        } else if stored == false {
            disk.configuration.logger.notice(
                "the load took longer than the lock's lease; another node's value stands",
                metadata: ["key": "\(key)", "fencingToken": "\(lock.fencingToken)"]
            )
        }
        return loaded
    }
}
