import Foundation
import GRDB
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskCache {
    /// What a disk cache directory holds, read from its index alone (no directory walk, no
    /// lock taken, nothing changed): for reports over caches that are not open here.
    public struct Summary: Sendable, Hashable, Codable {
        /// Entries in the index, expired ones included.
        public var count: Int
        /// Bytes of their values.
        public var logicalBytes: ByteCount
        /// Allocated bytes: the index files as they are, plus each value file's size rounded
        /// up to 4 KiB (kept by the index as values come and go: an estimate that equals `du`
        /// on file systems with 4 KiB blocks).
        public var allocatedBytes: ByteCount
        /// Entries whose time to live has passed but that no trim has removed yet.
        public var expiredCount: Int
        /// Bytes of those entries' values.
        public var expiredBytes: ByteCount
    }

    /// The index file of the disk cache in `directory`.
    static func indexPath(in directory: URL) -> String { directory.fileSystemPath + "/index.sqlite" }

    /// Whether `directory` holds a disk cache (its index), without opening it.
    public static func isDiskCache(_ directory: URL) -> Bool {
        FileStatus.of(indexPath(in: directory)) != nil
    }

    /// Reads the summary of the disk cache in `directory`, or `nil` when it holds no index.
    ///
    /// - Parameters:
    ///   - directory: The disk cache's directory (the one holding `index.sqlite`).
    ///   - now: The time that decides what has expired.
    /// - Throws: `StowageError` when the index cannot be read (`.unsupported` for a newer
    ///   format, `.corrupt` for a damaged file).
    public static func summary(ofDirectory directory: URL, now: Date = Date()) throws -> Summary? {
        let indexPath = indexPath(in: directory)
        var indexBytes: Int64 = 0
        guard FileStatus.of(indexPath) != nil else { return nil }
        for suffix in ["", "-wal", "-shm"] {
            indexBytes += FileStatus.of(indexPath + suffix)?.allocatedBytes ?? 0
        }
        do {
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(5)
            let queue = try DatabaseQueue(path: indexPath, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                guard version <= DiskCacheIndex.formatVersion else {
                    throw StowageError(
                        code: .unsupported,
                        message: "the disk cache index \(indexPath) has format \(version), newer than this "
                            + "Stowage's \(DiskCacheIndex.formatVersion); report it with the newer version",
                        path: indexPath
                    )
                }
                let totals = try DiskCacheIndex.totals(db)
                let expired = try Row.fetchOne(
                    db,
                    sql: "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM entry WHERE expires <= ?",
                    arguments: [now.timeIntervalSince1970]
                )
                let fileBytes = try DiskCacheIndex.fileAllocated(db)
                return Summary(
                    count: totals.count,
                    logicalBytes: ByteCount(totals.size),
                    allocatedBytes: ByteCount(indexBytes + fileBytes),
                    expiredCount: expired?[0] ?? 0,
                    expiredBytes: ByteCount(expired?[1] as Int64? ?? 0)
                )
            }
        } catch let error as DatabaseError {
            throw StowageError.index(error, path: indexPath)
        }
    }
}
