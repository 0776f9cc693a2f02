import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Empties directories: the `clearCacheWithFilePath:` that iOS apps write by hand, made safe.
///
/// ```swift
/// let report = try await DirectoryClearing.clearContents(of: cachesURL)
/// print("freed", report.bytesFreed.formatted(.compact))
/// ```
///
/// Differences from that hand-written loop, each on purpose:
/// - The directory itself stays; only its contents go.
/// - Symbolic links are removed as links and never followed, so a link to a directory outside
///   cannot make clearing delete anything outside. Subdirectories are opened relative to their
///   parent with `O_NOFOLLOW`, so a directory swapped for a link mid-way is not followed either.
/// - An entry that is already gone counts as removed; an entry that cannot be removed is
///   reported in ``ClearReport/failures`` and the rest are still removed (the hand-written loop
///   stopped at the first error).
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
        let directory = OpenDirectory(descriptor: descriptor, path: path)
        try cancellation?.check()
        var removal = TreeRemoval(cancellation: cancellation, measuresFreedBytes: true)
        try removal.removeContents(of: directory, keeping: keeping)
        var report = ClearReport(path: path)
        report.removedCount = removal.removedCount
        report.bytesFreed = removal.bytesFreed
        report.failures = removal.failures
        return report
    }

    /// Removes the entry `name` of the directory at `parentPath`, with everything below it, as
    /// `rm -r --one-file-system PARENT/NAME`: for stores that move a directory aside and then
    /// delete it (a wiped user's tombstone, a removed database's `.removing-` directory).
    ///
    /// The removal stays on `boundary` (the container location's file system and mount): a
    /// parent reached through a link to another file system is left whole and named; so is an
    /// entry that is itself a mount point (a tree mounted over a leftover's name since it was
    /// made), whose files are another file system's; so is any mount below it, and its parent
    /// directories stay. A symbolic link is removed as a link, never followed.
    ///
    /// - Parameter boundary: The file system to stay on; `nil` for the parent's own.
    /// - Returns: What was removed and left (mount points as `"skipped: another file system"`);
    ///   `nil` when nothing was there (another process removed it first).
    /// - Throws: `StowageError` when the parent cannot be opened (other than missing).
    package static func removeTree(
        named name: String,
        in parentPath: String,
        staysOn boundary: FileSystemBoundary?
    ) throws -> ClearReport? {
        let parent: OpenDirectory
        do {
            parent = try OpenDirectory.open(path: parentPath, boundary: boundary)
        } catch let error as StowageError where error.code == .notFound {
            return nil
        }
        var removal = TreeRemoval(cancellation: nil, measuresFreedBytes: true)
        try removal.remove(name, in: parent)
        guard removal.removedCount > 0 || !removal.failures.isEmpty else { return nil }
        return ClearReport(
            path: parent.pathOf(name),
            removedCount: removal.removedCount,
            bytesFreed: removal.bytesFreed,
            failures: removal.failures
        )
    }
}
