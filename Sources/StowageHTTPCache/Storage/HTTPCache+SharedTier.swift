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
            _ = await sharedHealth.call("set") { try await shared.setData(data, forKey: recordKey, timeToLive: lifetime) }
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
        guard let shared = configuration.sharedTier else { return nil }
        return await sharedHealth.call("get") { try await shared.entry(forKey: key) }??.data
    }

    /// Drops local copies of what other nodes change: a record or body key from memory and disk;
    /// everything in memory when invalidations may have been missed.
    func startListeningForInvalidations() {
        guard let shared = configuration.sharedTier else { return }
        let stream = shared.invalidations()
        let task = Task { [weak self] in
            for await invalidation in stream {
                guard let self else { return }
                switch invalidation {
                case .key(let key):
                    memory.removeValue(forKey: key)
                    _ = try? await disk.removeData(forKey: key)
                case .all:
                    memory.removeAll()
                }
            }
        }
        invalidationListener.withLock { $0 = task }
    }
}
