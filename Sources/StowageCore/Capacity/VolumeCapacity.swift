import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much space the volume holding a path has, in the four figures of Apple's volume capacity keys (total, available, important and
/// opportunistic usage).
///
/// ```swift
/// let capacity = try await VolumeCapacity.forVolume(containing: cachesURL)
/// if download.size < capacity.availableForOpportunisticUsage { … }   // nice-to-have data
/// if document.size < capacity.availableForImportantUsage { … }       // must-save data
/// ```
///
/// On macOS, iOS and visionOS the last two are the system's own figures, Apple's
/// `URLResourceValues.volumeAvailableCapacityForImportantUsage` and
/// `…ForOpportunisticUsage` (private heuristics that count purgeable space), and the total and
/// available space are `volumeTotalCapacity` and `volumeAvailableCapacity`. On Linux (and tvOS,
/// which has no such keys) Stowage computes them from `statvfs` (tvOS: the resource values) and
/// two documented, configurable ``Reserves``: important data may use all but a small reserve;
/// opportunistic data (caches, prefetching) should leave a larger one, so that caches stop
/// growing well before the user's own files run out of room.
public struct VolumeCapacity: Sendable, Hashable, Codable {
    /// The file system's identifier (`f_fsid`): equal for two paths on the same volume.
    public var volumeID: UInt64
    /// The volume's size (`f_blocks × f_frsize`).
    public var total: ByteCount
    /// Space an unprivileged process may still use (`f_bavail × f_frsize`); the root-only
    /// reserve of ext4 and friends is not included.
    public var available: ByteCount
    /// ``available`` minus ``Reserves/important``, never negative: the budget for user content
    /// and data that cannot be regenerated.
    public var availableForImportantUsage: ByteCount
    /// ``available`` minus ``Reserves/opportunistic``, never negative: the budget for caches,
    /// thumbnails and prefetching.
    public var availableForOpportunisticUsage: ByteCount

    /// Space to keep free before important or opportunistic data stops being welcome.
    public struct Reserves: Sendable, Hashable {
        /// Kept free from important data. Default: 1% of the volume, at most 1 GB.
        public var important: Reserve
        /// Kept free from opportunistic data. Default: 10% of the volume, at most 10 GB.
        public var opportunistic: Reserve

        /// Creates reserves; the defaults are documented on each property.
        public init(
            important: Reserve = .fraction(0.01, atMost: .gigabyte),
            opportunistic: Reserve = .fraction(0.10, atMost: 10 * .gigabyte)
        ) {
            self.important = important
            self.opportunistic = opportunistic
        }
    }

    /// An amount of space to keep free.
    public enum Reserve: Sendable, Hashable {
        /// A fixed number of bytes.
        case bytes(ByteCount)
        /// A fraction of the volume's total size, in `0...1`, optionally capped.
        case fraction(Double, atMost: ByteCount? = nil)

        /// The reserve on a volume of `total` bytes.
        public func bytes(ofTotal total: ByteCount) -> ByteCount {
            switch self {
            case .bytes(let bytes):
                return bytes
            case .fraction(let fraction, let cap):
                let share = ByteCount(Int64((Double(total.rawValue) * min(max(fraction, 0), 1)).rounded()))
                return cap.map { min(share, $0) } ?? share
            }
        }
    }

    /// Creates capacity figures from `statvfs` numbers and reserves.
    public init(total: ByteCount, available: ByteCount, reserves: Reserves = Reserves(), volumeID: UInt64 = 0) {
        self.volumeID = volumeID
        self.total = total
        self.available = available
        self.availableForImportantUsage = max(.zero, available - reserves.important.bytes(ofTotal: total))
        self.availableForOpportunisticUsage = max(.zero, available - reserves.opportunistic.bytes(ofTotal: total))
    }

    /// Reads the capacity of the volume holding `url` without blocking Swift's cooperative threads.
    ///
    /// - Parameters:
    ///   - url: A file or directory on the volume.
    ///   - reserves: What to keep free from important and opportunistic data; unused on macOS,
    ///     iOS and visionOS, where the system reports both budgets itself.
    /// - Throws: ``StowageError`` (`.notFound`, `.permissionDenied`) when `url` cannot be examined.
    public static func forVolume(containing url: URL, reserves: Reserves = Reserves()) async throws -> VolumeCapacity {
        try await BlockingWork.run { try forVolume(containing: url, reserves: reserves) }
    }

    /// The synchronous overload of `forVolume(containing:reserves:)`: the same work on the calling thread.
    public static func forVolume(containing url: URL, reserves: Reserves = Reserves()) throws -> VolumeCapacity {
        let path = try url.checkedFileSystemPath(subject: "cannot read the capacity")
        var info = statvfs()
        guard statvfs(path, &info) == 0 else {
            throw StowageError.syscall(.current, "read the capacity of", path: path)
        }
        #if canImport(Darwin)
        return try systemCapacity(
            of: url,
            path: path,
            reserves: reserves,
            volumeID: UInt64(truncatingIfNeeded: info.f_fsid)
        )
        #else
        let fragment = Int64(info.f_frsize)
        return VolumeCapacity(
            total: ByteCount(Int64(info.f_blocks) * fragment),
            available: ByteCount(Int64(info.f_bavail) * fragment),
            reserves: reserves,
            volumeID: UInt64(truncatingIfNeeded: info.f_fsid)
        )
        #endif
    }

    #if canImport(Darwin)
    /// Apple's figures for the volume holding `url`, from `URLResourceValues`.
    ///
    /// Darwin's `statvfs` counts blocks in 32 bits and knows nothing of purgeable space, so only
    /// its `f_fsid` is used here.
    private static func systemCapacity(
        of url: URL,
        path: String,
        reserves: Reserves,
        volumeID: UInt64
    ) throws -> VolumeCapacity {
        var keys: Set<URLResourceKey> = [.volumeTotalCapacityKey, .volumeAvailableCapacityKey]
        #if os(macOS) || os(iOS) || os(visionOS)
        keys.formUnion([.volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityForOpportunisticUsageKey])
        #endif
        let values: URLResourceValues
        do {
            values = try url.resourceValues(forKeys: keys)
        } catch {
            throw StowageError.foundation(error, "read the capacity of", path: path)
        }
        guard let total = values.volumeTotalCapacity, let available = values.volumeAvailableCapacity else {
            throw StowageError(
                code: .unsupported,
                message: "cannot read the capacity of \(PathInput.quoted(path, limit: 1_024)): the volume reports "
                    + "no total or available capacity",
                path: path
            )
        }
        var capacity = VolumeCapacity(
            total: ByteCount(Int64(total)),
            available: ByteCount(Int64(available)),
            reserves: reserves,
            volumeID: volumeID
        )
        #if os(macOS) || os(iOS) || os(visionOS)
        // The system's own budgets replace the reserves where it has them.
        if let important = values.volumeAvailableCapacityForImportantUsage {
            capacity.availableForImportantUsage = ByteCount(important)
        }
        if let opportunistic = values.volumeAvailableCapacityForOpportunisticUsage {
            capacity.availableForOpportunisticUsage = ByteCount(opportunistic)
        }
        #endif
        return capacity
    }
    #endif
}
