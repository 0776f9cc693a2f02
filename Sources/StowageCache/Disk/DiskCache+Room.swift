import Foundation
import Logging
import StowageCore

// Apple's storage guide's two patterns for writing when the volume is short of space: gate
// nice-to-have data (thumbnails, prefetched pages) on the *opportunistic* capacity (Pattern 1),
// and clean old cache entries before adding when free space is low (Pattern 2).

extension DiskCache {
    /// How much a write is worth when the volume is short of space.
    public enum WritePriority: Sendable, Hashable {
        /// Data the app needs (the default): written while the volume has room for important
        /// data (``Configuration/checksVolumeCapacity``), after making room if
        /// ``Configuration/freeSpaceFloor`` asks for it.
        case important
        /// Nice-to-have data (a thumbnail, a prefetched page): skipped, with
        /// ``WriteOutcome/skippedForLowSpace(available:)``, when the value does not fit the
        /// volume's opportunistic capacity (`VolumeCapacity.availableForOpportunisticUsage`,
        /// which keeps a reserve free for the important writes of this app and others).
        case opportunistic
    }

    /// What a write did.
    public enum WriteOutcome: Sendable, Hashable {
        /// The value was stored.
        case stored
        /// An ``WritePriority/opportunistic`` value was not stored: the volume's opportunistic
        /// capacity, `available`, was smaller than the value. The previous value for the key,
        /// if any, stays.
        case skippedForLowSpace(available: ByteCount)
    }

    /// Whether an opportunistic value of `count` bytes fits the volume's opportunistic
    /// capacity; the capacity when it does not.
    func opportunisticShortfall(for count: Int) throws -> ByteCount? {
        let capacity = try VolumeCapacity.forVolume(containing: directory)
        let available = capacity.availableForOpportunisticUsage
        return Int64(count) > available.rawValue || available == .zero ? available : nil
    }

    /// Pattern 2: before an important write of `count` bytes, when the volume's space for
    /// important data would fall under ``Configuration/freeSpaceFloor``, trims this cache's
    /// least recently used entries until it would not (or the cache is empty).
    func makeRoom(for count: Int) throws {
        guard let floor = configuration.freeSpaceFloor else { return }
        // A value over the hard limit is refused next (checkRoom) whatever the volume has:
        // trimming for it emptied the cache for a write that never happened.
        if let budget = configuration.budget {
            let isFile = count > configuration.inlineThreshold
            let cost = DiskCacheIndex.accountedSize(Int64(count), isFile: isFile, accounting: budget.accounting)
            if cost > budget.limit { return }
        }
        let capacity = try VolumeCapacity.forVolume(containing: directory)
        let after = capacity.availableForImportantUsage.rawValue - Int64(count)
        guard after < floor.rawValue else { return }
        // Saturating: with a value larger than the space left (`after` negative) a floor near
        // Int64.max overflowed and trapped; trimming everything is what such a floor asks for.
        let (difference, overflow) = floor.rawValue.subtractingReportingOverflow(after)
        let needed = ByteCount(overflow ? .max : difference)
        let report = try trim(freeing: needed)
        configuration.logger.notice(
            "made room before a write",
            metadata: [
                "cache": "\(configuration.name)", "needed": "\(needed.formatted(.compact))",
                "removed": "\(report.expired + report.evicted)",
            ]
        )
    }
}
