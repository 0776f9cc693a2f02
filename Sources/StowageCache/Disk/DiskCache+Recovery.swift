import Foundation
import GRDB
import Logging
import StowageCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskCache {
    /// Leftovers younger than this may belong to another process's write in flight.
    static let orphanGracePeriod: TimeInterval = 120

    /// Removes every value file of an index that was rebuilt empty; what cannot be removed is
    /// logged and left, with no row pointing at it, for orphan collection to take later.
    static func removeOldValueFiles(_ files: DiskCacheFiles, configuration: Configuration) throws {
        let failures = try files.removeAllValues()
        guard !failures.isEmpty else { return }
        configuration.logger.warning(
            "disk cache rebuild could not remove every old value file",
            metadata: [
                "path": "\(files.dataDirectory)", "failures": "\(failures.count)",
                "first": "\(failures[0])", "cache": "\(configuration.name)",
            ]
        )
    }

    /// Opens the index; a damaged one is rebuilt or reported, as the configuration says.
    static func openIndex(
        path: String,
        files: DiskCacheFiles,
        configuration: Configuration,
        isOnlyUser: Bool
    ) throws -> DiskCacheIndex {
        do {
            return try DiskCacheIndex(
                path: path,
                synchronous: configuration.synchronousWrites,
                pageCacheSize: configuration.indexPageCacheSize,
                logger: configuration.logger
            )
        } catch let error as DatabaseError
            where [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode.primaryResultCode)
        {
            guard configuration.corruptIndexPolicy == .rebuild, isOnlyUser else {
                var reported = StowageError.index(error, path: path)
                if !isOnlyUser {
                    reported.message += " (another process has the cache open, so it was not rebuilt)"
                }
                throw reported
            }
            configuration.logger.warning(
                "disk cache index is damaged; starting an empty cache",
                metadata: ["path": "\(path)", "error": "\(error)", "cache": "\(configuration.name)"]
            )
            // Kept aside (one generation) for a post-mortem; the cache starts empty.
            for suffix in ["", "-wal", "-shm"] {
                if !FileNames.rename(path + suffix, to: path + ".damaged" + suffix) { FileNames.remove(path + suffix) }
            }
            try removeOldValueFiles(files, configuration: configuration)
            do {
                return try DiskCacheIndex(
                    path: path,
                    synchronous: configuration.synchronousWrites,
                    pageCacheSize: configuration.indexPageCacheSize,
                    logger: configuration.logger
                )
            } catch let error as DatabaseError {
                throw StowageError.index(error, path: path)
            }
        } catch let error as DatabaseError {
            throw StowageError.index(error, path: path)
        }
    }

    /// Checks the `totals` row against the entries and rewrites it when it is wrong (logged). A
    /// wrong row (a hand edit, a damaged page, a bug) would otherwise make every write look over
    /// the limit and be evicted at once.
    ///
    /// The scan runs in a read snapshot, beside the writers; only a wrong row takes the write
    /// lock (and is counted again inside it, where no write can slip between).
    ///
    /// Afterwards the commits may cull on the word of the row (`DiskCacheCommitQueue.Cull`); a
    /// cull begun on a wrong row is called off.
    func repairTotalsIfWrong() throws {
        guard try indexCall({ try index.pool.read { db in try DiskCacheIndex.totalsDisagree(db) } }) else {
            commits.totalsAreVerified.store(true, ordering: .releasing)
            return
        }
        let (totals, wasWrong) = try indexCall { try index.write { db in try DiskCacheIndex.repairTotals(db) } }
        commits.totalsAreVerified.store(true, ordering: .releasing)
        if wasWrong {
            _ = commits.takeCullTarget()
            configuration.logger.warning(
                "disk cache totals disagreed with the entries; repaired",
                metadata: ["count": "\(totals.count)", "size": "\(totals.size)", "cache": "\(configuration.name)"]
            )
        }
    }

    /// Removes files no row points at, rows whose file is gone, and abandoned temporary files.
    ///
    /// Alone, everything found is collected; with other processes present, only files older
    /// than ``orphanGracePeriod``. Its cost follows the value files, not the entries: the rows
    /// with a file are read through the `entry_file` index, so inline values are never read.
    func collectOrphans(isOnlyUser: Bool) throws {
        let cutoff = Date().timeIntervalSince1970 - (isOnlyUser ? -1 : Self.orphanGracePeriod)
        // Through the open directories, never by path: a link planted in a subdirectory's place
        // is skipped, and nothing outside the cache's directory is examined or removed.
        func isOldEnough(_ name: String, in directory: OpenDirectory) -> Bool {
            guard let status = FileStatus.at(directory.descriptor, name) else { return false }
            return status.modificationTime.rounded(.down) < cutoff
        }
        // A mount inside the cache's directory is another file system's (FileSystemBoundary, as
        // `rm --one-file-system`): none of its files is taken for an orphan.
        var skipped: [String] = []
        if files.temporary.isInsideBoundary {
            for name in Self.names(in: files.temporary) where isOldEnough(name, in: files.temporary) {
                files.temporary.removeEntry(name)
            }
        } else {
            skipped.append(files.temporary.path)
        }
        let indexed = try indexCall {
            try index.pool.read { db in
                Set(try String.fetchAll(db, sql: "SELECT file FROM entry WHERE file IS NOT NULL"))
            }
        }
        var present = Set<String>()
        var removedFiles = 0
        for subdirectoryName in Self.names(in: files.data) {
            guard let subdirectory = try? files.data.childDirectory(subdirectoryName, creating: false) else {
                continue
            }
            // Its files' rows are dropped as rows without a file below: the cache forgets what
            // is on another mount, and never removes it.
            guard subdirectory.isInsideBoundary else {
                skipped.append(subdirectory.path)
                continue
            }
            for name in Self.names(in: subdirectory) {
                let relative = subdirectoryName + "/" + name
                if indexed.contains(relative) {
                    present.insert(relative)
                } else if isOldEnough(name, in: subdirectory) {
                    subdirectory.removeEntry(name)
                    removedFiles += 1
                }
            }
        }
        let missing = indexed.subtracting(present)
        do {
            if !missing.isEmpty {
                try indexCall {
                    try index.write { db in
                        for file in missing {
                            try db.execute(sql: "DELETE FROM entry WHERE file = ?", arguments: [file])
                        }
                    }
                }
            }
        } catch let error as StowageError where error.code == .noSpace {
            // A full volume must not keep the cache from opening: the next open tries again.
            configuration.logger.notice(
                "disk cache: no space to collect leftovers now",
                metadata: ["cache": "\(configuration.name)"]
            )
            return
        }
        for path in skipped {
            configuration.logger.warning(
                "disk cache: \(FileSystemBoundary.skipMessage)",
                metadata: ["path": "\(path)", "cache": "\(configuration.name)"]
            )
        }
        if removedFiles > 0 || !missing.isEmpty {
            configuration.logger.notice(
                "disk cache collected leftovers",
                metadata: [
                    "orphanFiles": "\(removedFiles)", "rowsWithoutFile": "\(missing.count)",
                    "cache": "\(configuration.name)",
                ]
            )
        }
    }

    /// The entries of a directory, without `.` and `..`; empty when it cannot be read.
    static func names(in directory: OpenDirectory) -> [String] {
        (try? directory.entries().map(\.name)) ?? []
    }
}
