import Foundation
import Logging
import StowageCore
import Synchronization

/// The shared level's part of ``HybridCache``: fall-through reads, invalidations from other
/// nodes, and loads coordinated across nodes.
extension HybridCache {
    /// Reads `key` from the shared level and, on a hit, fills disk and memory.
    func sharedValue(forKey key: String) async -> Value? {
        await levels.readShared(key, through: Reading(cache: self))
    }

    /// Drops local copies another node made stale.
    package func apply(_ invalidation: SharedCacheInvalidation) async {
        await levels.apply(invalidation)
    }

    /// Loads `key` once across the fleet: take the key's lock and load, or wait for the node
    /// that holds it, or load anyway when the wait times out or the shared level is down.
    package func loadCoordinated(
        key: String,
        timeToLive: Duration?,
        load: @Sendable () async throws -> Value
    ) async throws -> Value {
        guard let shared = levels.sharedLevel else {
            let loaded = try await load()
            try await setValue(loaded, forKey: key, timeToLive: timeToLive)
            return loaded
        }
        // Checked here, the first throwing call that uses them: `HybridCache.init` does not throw.
        try configuration.sharedLevel.validate()
        return try await loadCoordinated(
            key: key,
            timeToLive: timeToLive,
            shared: shared,
            clock: configuration.sharedLevel.waitClock,
            load: load
        )
    }

    /// ``loadCoordinated(key:timeToLive:load:)`` with its waits measured by `clock`.
    private func loadCoordinated<C: Clock<Duration>>(
        key: String,
        timeToLive: Duration?,
        shared: SharedLevel,
        clock: C,
        load: @Sendable () async throws -> Value
    ) async throws -> Value {
        let deadline = clock.now.advanced(by: configuration.sharedLevel.loadWaitTimeout)
        var reason = "timed out waiting for the node that holds the lock"
        // Times the lock was free yet no readable value there, in a row: once means the loader
        // failed (take over); twice, that the value there is one this node cannot read (another
        // node's newer format), which the lock is refused for.
        var freeWithoutValue = 0
        waiting: while clock.now < deadline {
            guard
                let acquired = await shared.health.call(
                    "lock",
                    {
                        try await shared.tier.lockForLoading(key: key, lease: configuration.sharedLevel.loadLockLease)
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
            configuration.sharedLevel.onWaitingForAnotherNode?(key)
            // Another node is loading: poll until its value lands, its lock goes, or time runs out.
            var pause = configuration.sharedLevel.pollInterval
            while clock.now < deadline {
                try await clock.sleep(for: min(pause, clock.now.duration(to: deadline)))
                pause = min(pause * 2, configuration.sharedLevel.maximumPollInterval)
                if let value = await sharedValue(forKey: key) { return value }
                let isLocked = await shared.health.call("lock-state") {
                    try await shared.tier.isLockedForLoading(key: key)
                }
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
        shared: SharedLevel,
        load: @Sendable () async throws -> Value
    ) async throws -> Value {
        let loaded: Value
        let data: Data
        do {
            loaded = try await load()
            data = try serializer.encode(loaded)
        } catch {
            _ = await shared.health.call("unlock") { try await shared.tier.unlock(lock) }
            throw error
        }
        let stored = try await levels.writingEverywhere(key) {
            try await storeLocally(loaded, data: data, forKey: key, timeToLive: timeToLive)
            return await levels.writeShared(data, forKey: key, timeToLive: timeToLive, releasing: lock)
        }
        if stored == false {
            disk.configuration.logger.notice(
                "the load took longer than the lock's lease; another node's value stands",
                metadata: ["key": "\(key)", "fencingToken": "\(lock.fencingToken)"]
            )
        }
        return loaded
    }
}
