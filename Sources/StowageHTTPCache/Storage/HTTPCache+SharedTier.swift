import Foundation
import Logging
import StowageCache
import StowageCore
import Synchronization

// The shared level (Configuration.sharedTier): records and bodies are written through to it and
// read from it when memory and disk miss, so nodes sharing it serve each other's responses.
// Bodies go first and records last, so a node that finds a record finds its body. Only records
// whose bodies are shared are shared; a body over `sharedBodyLimit` keeps its response local.
// Failures of the shared level are logged once per outage and counted; they never fail a
// request: the cache goes on with memory and disk.

extension HTTPCache {
    /// Publishes `records` of `key` (those whose bodies are shared), or removes the shared copy.
    func shareVariants(_ records: [VariantRecord], recordKey: String) async {
        guard let shared = configuration.sharedTier else { return }
        let shareable = records.filter { isShareable($0) }
        if shareable.isEmpty {
            _ = await sharedHealth.call("remove") { try await shared.removeData(forKey: recordKey) }
        } else {
            let data = Data(VariantRecord.encode(shareable))
            let lifetime = configuration.sharedTimeToLive
            _ = await sharedHealth.call("set") {
                try await shared.setData(data, forKey: recordKey, timeToLive: lifetime)
            }
        }
    }

    /// Publishes a stored body, if it is small enough to share.
    func shareBody(_ bytes: [UInt8], bodyKey: String) async {
        guard let shared = configuration.sharedTier, Int64(bytes.count) <= configuration.sharedBodyLimit.rawValue else {
            return
        }
        let data = Data(bytes)
        let lifetime = configuration.sharedTimeToLive
        _ = await sharedHealth.call("set") { try await shared.setData(data, forKey: bodyKey, timeToLive: lifetime) }
    }

    /// Removes a body from the shared level.
    func unshareBody(_ bodyKey: String) async {
        guard let shared = configuration.sharedTier else { return }
        _ = await sharedHealth.call("remove") { try await shared.removeData(forKey: bodyKey) }
    }

    /// Whether other nodes can be given `record`: durable, and its body within the limit.
    func isShareable(_ record: VariantRecord) -> Bool {
        !record.isMemoryOnly && (record.stored.bodyLength ?? Int64.max) <= configuration.sharedBodyLimit.rawValue
    }

    /// The bytes the shared level holds for `key`, or `nil` (none, or it is unreachable).
    func sharedData(forKey key: String) async -> Data? {
        guard let shared = configuration.sharedTier,
            case .found(let entry) = await sharedHealth.lookup(key, in: shared)
        else { return nil }
        return entry.data
    }

    /// The record bytes to use for a record found on disk. One stored before the
    /// ``InvalidationHorizon`` (an earlier run, or before the invalidation channel broke) may
    /// have missed an invalidation, so the shared level is asked: its copy replaces the local
    /// one, or, when it has none, the local one is removed (the response is fetched again). A
    /// local record with a variant too large to share loses that variant this way, once. When
    /// the shared level cannot be asked, the local record is used unchecked. Bodies need no
    /// check: every stored body has a key of its own.
    func confirmedRecord(_ stored: DiskCache.StoredData, recordKey: String) async throws -> Data? {
        guard let shared = configuration.sharedTier, horizon.requiresConfirmation(ofCopyStoredAt: stored.modified)
        else { return stored.data }
        switch await sharedHealth.lookup(recordKey, in: shared) {
        case .unreachable:
            return stored.data
        case .absent:
            try await levels.remove(recordKey)
            return nil
        case .found(let entry):
            try await requireDisk().setData(entry.data, forKey: recordKey)
            return entry.data
        }
    }

    /// Tells the other nodes sharing the level to apply a ban (`prefix` is a tag's or a URL
    /// prefix's index range); a level that cannot is logged, not thrown: the ban stands here.
    func broadcastBan(_ prefix: String) async {
        guard let shared = configuration.sharedTier else { return }
        do {
            try await shared.invalidate(keysWithPrefix: prefix)
        } catch {
            configuration.logger.warning(
                "could not send a ban to the other nodes; they keep their copies until they expire",
                metadata: ["prefix": "\(prefix)", "error": "\(error)"]
            )
        }
    }

    /// Applies another node's ban here: a tag's (`k TAG `) or a URL prefix's (`m PREFIX`) stored
    /// responses go, as the node's own ``ban(tag:)`` / ``ban(urlPrefix:)`` would remove them
    /// (shared copies included, which reach nodes that never saw the tag); other keys under the
    /// prefix are dropped from memory and disk.
    func applyBan(_ prefix: String) async {
        do {
            if prefix.hasPrefix("k "), prefix.hasSuffix(" ") {
                _ = try await banLocally(tag: String(prefix.dropFirst(2).dropLast()))
            } else if prefix.hasPrefix("m ") {
                _ = try await banLocally(urlPrefix: String(prefix.dropFirst(2)))
            } else {
                await levels.drop(keysWithPrefix: prefix, reason: "copies another node banned")
            }
        } catch {
            configuration.logger.warning(
                "could not apply another node's ban",
                metadata: ["prefix": "\(prefix)", "error": "\(error)"]
            )
        }
    }

    /// Drops what another node's change made stale here.
    func apply(_ invalidation: SharedCacheInvalidation) async {
        switch invalidation {
        case .key(let key):
            await levels.drop(key, reason: "an invalidated disk copy")
        case .prefix(let prefix):
            await applyBan(prefix)
        case .all, .emptied:
            horizon.apply(invalidation)
            levels.dropMemory()
        case .interrupted:
            horizon.apply(invalidation)
        }
    }
}
