import Logging
import StowageCore
import Synchronization

/// The local levels of a tiered cache, memory in front of disk, and the one place that decides
/// the order in which copies leave them: ``HybridCache`` and the HTTP cache both remove and
/// invalidate through it.
///
/// **Disk first, then memory.** A read that misses memory goes to disk and puts what it finds
/// back in memory. Were memory dropped first, a read between the two removals would find the
/// old disk copy and promote it, and the stale value would outlive its removal in memory. With
/// the disk copy gone first, such a read finds nothing (or the memory copy that is about to go).
///
/// A disk failure never keeps the memory copy: it goes either way, and the failure is thrown
/// (a caller's removal) or logged (an invalidation from another node, which has no caller).
///
/// **Promotion loses to removal.** A read that found a disk copy just before a removal must not
/// put it in memory just after: every removal and invalidation first advances ``changeCount``,
/// and ``promote(_:forKey:cost:readAt:)`` keeps a value only when the count did not move since
/// the read, checking again after the insertion.
package final class CacheLevels<Value: Sendable>: Sendable {
    /// The memory level, in front.
    package let memory: MemoryCache<String, Value>
    /// The disk level, behind memory.
    package let disk: DiskCache
    /// Where failures that cannot be thrown are told.
    package let logger: Logger
    private let changes = Atomic<UInt64>(0)

    /// The levels `memory` in front of `disk`.
    package init(memory: MemoryCache<String, Value>, disk: DiskCache, logger: Logger) {
        self.memory = memory
        self.disk = disk
        self.logger = logger
    }

    /// Removals and invalidations begun so far: read it before a disk read, hand it to
    /// ``promote(_:forKey:cost:readAt:)`` after.
    package var changeCount: UInt64 { changes.load(ordering: .acquiring) }

    /// Counts a removal or invalidation about to begin: promotions of earlier reads give way.
    package func noteChange() {
        changes.add(1, ordering: .acquiringAndReleasing)
    }

    /// Puts `value`, read below memory when ``changeCount`` was `change`, in memory, unless a
    /// removal or invalidation began since (the copy it was read from may be gone).
    ///
    /// - Returns: Whether the value stayed in memory.
    @discardableResult
    package func promote(_ value: Value, forKey key: String, cost: Int, readAt change: UInt64) -> Bool {
        guard changeCount == change else { return false }
        memory.setValue(value, forKey: key, cost: cost)
        // A removal that began between the check and the insertion may have dropped the memory
        // copy before it was there: drop it again.
        guard changeCount == change else {
            _ = memory.removeValue(forKey: key)
            return false
        }
        return true
    }

    /// Removes `key` from disk, then from memory.
    ///
    /// - Throws: What the disk cache throws; the memory copy is gone all the same.
    package func remove(_ key: String) async throws {
        noteChange()
        defer { _ = memory.removeValue(forKey: key) }
        try await disk.removeData(forKey: key)
    }

    /// Drops the local copies of `key` another node made stale: disk (when `includingDisk`),
    /// then memory. A disk failure is logged with `reason` (what was being dropped).
    package func drop(_ key: String, includingDisk: Bool = true, reason: String) async {
        noteChange()
        if includingDisk {
            do {
                try await disk.removeData(forKey: key)
            } catch {
                logger.warning("could not drop \(reason)", metadata: ["key": "\(key)", "error": "\(error)"])
            }
        }
        _ = memory.removeValue(forKey: key)
    }

    /// Drops every local copy whose key starts with `prefix` (a ban): disk (when
    /// `includingDisk`), then memory. A disk failure is logged with `reason`.
    package func drop(keysWithPrefix prefix: String, includingDisk: Bool = true, reason: String) async {
        noteChange()
        if includingDisk {
            do {
                for key in try await BlockingWork.run({ try self.disk.keysBlocking(withPrefix: prefix) }) {
                    try await disk.removeData(forKey: key)
                }
            } catch {
                logger.warning("could not drop \(reason)", metadata: ["prefix": "\(prefix)", "error": "\(error)"])
            }
        }
        memory.removeValues { $0.hasPrefix(prefix) }
    }

    /// Empties both levels, disk first. Emptying the disk cache advances its store generation,
    /// so every other handle on it empties its memory level too.
    package func removeAll() async throws {
        noteChange()
        defer { memory.removeAll() }
        try await disk.removeAll()
    }
}
