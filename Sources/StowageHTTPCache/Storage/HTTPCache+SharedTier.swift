import Foundation
import Logging
import StowageCache
import StowageCore
import Synchronization

// The shared level (Configuration.sharedTier): records and bodies are written through to it and
// read from it when memory and disk miss, so nodes sharing it serve each other's responses.
// Bodies go first and records last, so a node that finds a record finds its body. Only records
// whose bodies are shared are shared; a body over `sharedBodyLimit` keeps its response local.
// `CacheLevels` runs the level (`CacheLevels+Shared.swift`), as for `HybridCache`: failures are
// logged once per outage and counted and never fail a request (the cache goes on with memory
// and disk), changes the level missed are sent when it answers again, a fill an invalidation
// overtook is dropped, and records that may have missed an invalidation are confirmed.

extension HTTPCache {
    /// The shared level of `configuration`, if it has one. A replayed write (a change the shared
    /// level missed during an outage) sends only what ``isShareable(_:)`` lets other nodes have,
    /// with the configured lifetime, as a write does.
    static func sharedLevel(_ configuration: Configuration) -> SharedLevel? {
        guard let tier = configuration.sharedTier else { return nil }
        let bodyLimit = configuration.sharedBodyLimit.rawValue
        let lifetime = configuration.sharedTimeToLive
        return SharedLevel(
            tier: tier,
            options: configuration.sharedLevel,
            name: configuration.name,
            logger: configuration.logger,
            clock: configuration.clock
        ) { key, data, _ in
            guard key.hasPrefix("m ") else { return Int64(data.count) <= bodyLimit ? (data, lifetime) : nil }
            let shareable = ((try? VariantRecord.decode(data)) ?? []).filter { isShareable($0, bodyLimit: bodyLimit) }
            return shareable.isEmpty ? nil : (Data(VariantRecord.encode(shareable)), lifetime)
        }
    }

    /// Publishes `records` of `key` (those whose bodies are shared), or removes the shared copy.
    func shareVariants(_ records: [VariantRecord], recordKey: String) async {
        let shareable = records.filter { isShareable($0) }
        if shareable.isEmpty {
            await levels.removeShared(recordKey)
        } else {
            let data = Data(VariantRecord.encode(shareable))
            await levels.writeShared(data, forKey: recordKey, timeToLive: configuration.sharedTimeToLive)
        }
    }

    /// Publishes a stored body, if it is small enough to share.
    func shareBody(_ bytes: [UInt8], bodyKey: String) async {
        guard Int64(bytes.count) <= configuration.sharedBodyLimit.rawValue else { return }
        await levels.writeShared(Data(bytes), forKey: bodyKey, timeToLive: configuration.sharedTimeToLive)
    }

    /// Removes a body from the shared level.
    func unshareBody(_ bodyKey: String) async {
        await levels.removeShared(bodyKey)
    }

    /// Whether other nodes can be given `record`: durable, and its body within the limit.
    func isShareable(_ record: VariantRecord) -> Bool {
        Self.isShareable(record, bodyLimit: configuration.sharedBodyLimit.rawValue)
    }

    /// Whether other nodes can be given `record`: durable, and its body within `bodyLimit` bytes.
    static func isShareable(_ record: VariantRecord, bodyLimit: Int64) -> Bool {
        !record.isMemoryOnly && (record.stored.bodyLength ?? Int64.max) <= bodyLimit
    }

    /// Tells the other nodes sharing the level to apply a ban (`prefix` is a tag's or a URL
    /// prefix's index range). The ban stands here at once; one the level does not take waits
    /// in the levels' outage queue with the removals and is sent when the level answers again
    /// (``CacheLevels/banShared(_:)``).
    func broadcastInvalidation(_ prefix: String) async {
        await levels.banShared(prefix)
    }

    /// Applies another node's ban here: a tag's (`k TAG `) or a URL prefix's (`m PREFIX`) stored
    /// responses go, as the node's own ``invalidate(tag:)`` / ``invalidate(urlPrefix:)`` would remove them
    /// (shared copies included, which reach nodes that never saw the tag); other keys under the
    /// prefix are dropped from memory and disk.
    func applyBan(_ prefix: String) async {
        do {
            if prefix.hasPrefix("k "), prefix.hasSuffix(" ") {
                _ = try await invalidateLocally(tag: String(prefix.dropFirst(2).dropLast()))
            } else if prefix.hasPrefix("m ") {
                _ = try await invalidateLocally(urlPrefix: String(prefix.dropFirst(2)))
            } else if prefix.isEmpty {
                // A node's bans past its outage queue's limit, widened to every key
                // (`PendingSharedWrites.record`): every URL's responses go, shared copies
                // included, as any of the bans it stands for would have removed its own.
                _ = try await invalidateLocally(urlPrefix: "")
            } else {
                await invalidations.begin(.all)
                await levels.drop(keysWithPrefix: prefix, reason: "copies another node banned")
            }
        } catch {
            configuration.logger.warning(
                "could not apply another node's ban",
                metadata: ["prefix": "\(prefix)", "error": "\(error)"]
            )
        }
    }

    /// Drops what another node's change made stale here; its bans as ``applyBan(_:)`` says.
    func apply(_ invalidation: SharedCacheInvalidation) async {
        await order(invalidation)
        await levels.apply(invalidation, banning: applyBan)
    }

    /// Counts another node's invalidation in ``invalidations`` before it is applied: its change
    /// of a URL's records (a purge, or a newer response it stored) and its purges of everything
    /// overtake this node's fetches as its own invalidations do. Bans are counted as they are
    /// applied (``applyBan(_:)``), bodies not at all (every stored body has a key of its own).
    func order(_ invalidation: SharedCacheInvalidation) async {
        switch invalidation {
        case .key(let key) where key.hasPrefix("m "): await invalidations.begin(.uri(String(key.dropFirst(2))))
        case .all, .emptied: await invalidations.begin(.all)
        case .key, .prefix, .interrupted: break
        }
    }
}
