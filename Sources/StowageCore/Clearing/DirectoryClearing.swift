import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Empties directories: the seed's `clearCacheWithFilePath:`, made safe.
///
/// ```swift
/// let report = try await DirectoryClearing.clearContents(of: cachesURL)
/// print("freed", report.bytesFreed.formatted(.compact))
/// ```
///
/// Differences from the seed, each on purpose:
/// - The directory itself stays; only its contents go.
/// - Symbolic links are removed as links and never followed, so a link to a directory outside
///   cannot make clearing delete anything outside. Subdirectories are opened relative to their
///   parent with `O_NOFOLLOW`, so a directory swapped for a link mid-way is not followed either.
/// - An entry that is already gone counts as removed; an entry that cannot be removed is
///   reported in ``ClearReport/failures`` and the rest are still removed (the seed stopped at
///   the first error).
public enum DirectoryClearing {
    /// Removes everything inside `directory` without blocking Swift's cooperative threads.
    ///
    /// - Parameters:
    ///   - directory: The directory to empty. It must not itself be a symbolic link.
    ///   - keeping: Names of top-level entries to leave in place (e.g. `CACHEDIR.TAG`).
    /// - Returns: What was removed and freed, and what could not be removed.
    /// - Throws: ``StowageError`` when `directory` is missing (`.notFound`), not a directory or a
    ///   symbolic link (`.notADirectory`, `.invalidArgument`), or unreadable; `CancellationError`
    ///   when the task is cancelled (checked per directory; what was removed stays removed).
    public static func clearContents(of directory: URL, keeping: Set<String> = []) async throws -> ClearReport {
        let cancellation = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await BlockingWork.run {
                try clearContents(of: directory, keeping: keeping, cancellation: cancellation)
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// The synchronous overload of `clearContents(of:keeping:)`: the same work on the calling thread.
    public static func clearContents(of directory: URL, keeping: Set<String> = []) throws -> ClearReport {
        try clearContents(of: directory, keeping: keeping, cancellation: nil)
    }

    private static func clearContents(
        of directory: URL,
        keeping: Set<String>,
        cancellation: CancellationFlag?
    ) throws -> ClearReport {
        let path = directory.fileSystemPath
        let descriptor = try ClearingTarget.openDirectory(path)
        return try clearContents(
            ofOpenDirectory: descriptor,
            path: path,
            keeping: keeping,
            cancellation: cancellation
        )
    }

    /// Empties the directory open at `descriptor`, which this call closes.
    ///
    /// The directory is judged by what was opened, not by its path: the file-system root and
    /// the home directory with its ancestors are refused by device and inode, however they were
    /// reached (a trailing `/.`, a bind mount, a link in a parent).
    package static func clearContents(
        ofOpenDirectory descriptor: Int32,
        path: String,
        keeping: Set<String>,
        cancellation: CancellationFlag?
    ) throws -> ClearReport {
        do {
            try ClearingTarget.refuseProtected(descriptor, path: path)
        } catch {
            close(descriptor)
            throw error
        }
        var report = ClearReport(path: path)
        try removeContents(of: descriptor, path: path, keeping: keeping, report: &report, cancellation: cancellation)
        return report
    }

    /// Removes every entry of the directory open at `descriptor` (closed by this call).
    private static func removeContents(
        of descriptor: Int32,
        path: String,
        keeping: Set<String>,
        report: inout ClearReport,
        cancellation: CancellationFlag?
    ) throws {
        guard let directory = fdopendir(descriptor) else {
            report.failures.append(.init(path: path, message: "cannot read directory: \(Errno.current)"))
            close(descriptor)
            return
        }
        defer { closedir(directory) }
        try cancellation?.check()
        // Read the names first: removing entries while readdir walks the same directory may skip some.
        var names: [String] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 {
                    report.failures.append(.init(path: path, message: "cannot read directory: \(Errno.current)"))
                }
                break
            }
            let name = String(
                cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
            )
            if name != "." && name != ".." && !keeping.contains(name) { names.append(name) }
        }
        // Stores first, so that no open handle serves what is about to go (see StoreGeneration).
        StoreGeneration.retireStores(named: names, in: descriptor)
        for name in names {
            try remove(name, in: descriptor, parentPath: path, report: &report, cancellation: cancellation)
        }
    }

    private static func remove(
        _ name: String,
        in parent: Int32,
        parentPath: String,
        report: inout ClearReport,
        cancellation: CancellationFlag?
    ) throws {
        let path = parentPath.hasSuffix("/") ? parentPath + name : parentPath + "/" + name
        var status = stat()
        guard fstatat(parent, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno != ENOENT {
                report.failures.append(.init(path: path, message: "cannot examine: \(Errno.current)"))
            }
            return
        }
        if FileType(status) == .directory {
            let child = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 {
                try removeContents(of: child, path: path, keeping: [], report: &report, cancellation: cancellation)
            } else if errno != ELOOP && errno != ENOTDIR && errno != ENOENT {
                report.failures.append(.init(path: path, message: "cannot read directory: \(Errno.current)"))
                return
            }
            // ELOOP/ENOTDIR: replaced by a link or file since fstatat; unlinkat below removes that.
            if unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT {
                report.removedCount += 1
                report.bytesFreed += ByteCount(Int64(status.st_blocks) * 512)
                return
            }
            if errno != ENOTDIR {
                report.failures.append(.init(path: path, message: "cannot remove directory: \(Errno.current)"))
                return
            }
        }
        if unlinkat(parent, name, 0) == 0 || errno == ENOENT {
            report.removedCount += 1
            // A file with other links keeps its blocks until the last one goes.
            if status.st_nlink <= 1 { report.bytesFreed += ByteCount(Int64(status.st_blocks) * 512) }
        } else {
            report.failures.append(.init(path: path, message: "cannot remove: \(Errno.current)"))
        }
    }
}
