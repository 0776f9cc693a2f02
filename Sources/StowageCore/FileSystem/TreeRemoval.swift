#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Removes entries and whole trees relative to open directory descriptors, never following a
/// symbolic link and never building a path for a system call.
///
/// Subdirectories are opened with `openat(…, O_NOFOLLOW | O_DIRECTORY)` and emptied through
/// that descriptor; a link is removed with `unlinkat` as a link. The type comes from `readdir`'s
/// `d_type` where the file system gives it, so most entries cost one `unlinkat` and no `stat`
/// (how `rm -rf` and `find -delete` stay fast). When an entry changes type between `readdir` and
/// the removal, the error (`EISDIR`, `ELOOP`, `ENOTDIR`) says so and the other way is taken.
///
/// Cancellation is checked before every removal: the walk stops between files, and what was
/// removed stays removed.
///
/// No removal leaves the file system it was given, as `rm --one-file-system` does: the boundary
/// is the directory's ``OpenDirectory/boundary`` (a container location's, for paths resolved in
/// it) or else the first directory's own file system. A directory found on another file system
/// or mount (``FileSystemBoundary``) is neither emptied nor removed; it is reported in
/// ``failures`` with ``FileSystemBoundary/skipMessage``, and its parent stays.
///
/// ``DirectoryClearing``, the cleaner, purgeable directories and user wipes all remove through
/// this one type.
package struct TreeRemoval {
    /// Entries removed so far.
    package private(set) var removedCount = 0
    /// Space given back so far (`st_blocks × 512`), when measuring; a file with other links
    /// keeps its blocks until the last one goes, so it frees nothing.
    package private(set) var bytesFreed = ByteCount.zero
    /// Entries that could not be removed.
    package private(set) var failures: [ClearReport.Failure] = []
    private let cancellation: CancellationFlag?
    private let measuresFreedBytes: Bool
    private let onRemoved: (Int) -> Void
    /// The file system every removal stays on, fixed by the first directory the walk is given.
    private var boundary: FileSystemBoundary?

    /// - Parameters:
    ///   - measuresFreedBytes: Examine every entry before removing it, to add up
    ///     ``bytesFreed``; without it, most entries cost one `unlinkat` and no `stat`.
    ///   - onRemoved: Called after each removal with ``removedCount``.
    package init(
        cancellation: CancellationFlag?,
        measuresFreedBytes: Bool = false,
        onRemoved: @escaping (Int) -> Void = { _ in }
    ) {
        self.cancellation = cancellation
        self.measuresFreedBytes = measuresFreedBytes
        self.onRemoved = onRemoved
    }

    /// Removes `name` from `parent`, and everything below it if it is a directory.
    ///
    /// The directories being emptied wait on a stack of this walk's own, not on the thread's: a
    /// tree thousands of levels deep costs a descriptor per level (`EMFILE`, reported, where
    /// they run out), never a stack overflow.
    ///
    /// - Parameter type: `d_type` from the listing, or `DT_UNKNOWN`.
    /// - Throws: `CancellationError` only; failures are collected in ``failures``.
    package mutating func remove(_ name: String, type: UInt8 = UInt8(DT_UNKNOWN), in parent: OpenDirectory) throws {
        guard admits(parent) else { return }
        try remove(Array(name.utf8CString), shownAs: name, type: type, in: parent)
    }

    /// Whether `directory` is on the walk's file system (its own ``OpenDirectory/boundary``, or
    /// the one the first directory fixed); reports it skipped when it is not.
    private mutating func admits(_ directory: OpenDirectory) -> Bool {
        if let given = directory.boundary {
            boundary = given
        } else if boundary == nil {
            guard let own = directory.effectiveBoundary else {
                fail(directory.path, "cannot examine")
                return false
            }
            boundary = own
        }
        guard let boundary, boundary.contains(descriptor: directory.descriptor) else {
            skip(directory.path)
            return false
        }
        return true
    }

    /// Removes the entry named by the NUL-terminated bytes `name`, as `remove(_:type:in:)` does.
    private mutating func remove(_ name: [CChar], shownAs shown: String, type: UInt8, in parent: OpenDirectory) throws {
        var levels: [Level] = []
        if let level = try removeOrOpen(name, shownAs: shown, type: type, in: parent) { levels.append(level) }
        while let top = levels.indices.last {
            if levels[top].next < levels[top].entries.count {
                let entry = levels[top].entries[levels[top].next]
                levels[top].next += 1
                let directory = levels[top].directory
                if let level = try removeOrOpen(entry.rawName, shownAs: entry.name, type: entry.type, in: directory) {
                    levels.append(level)
                }
                continue
            }
            let emptied = levels.removeLast()
            if unlinkat(emptied.parent.descriptor, emptied.name, AT_REMOVEDIR) == 0 || errno == ENOENT {
                removed(freeing: emptied.freed)
            } else if errno == EBUSY, isOutside(emptied.name, in: emptied.parent) {
                // Mounted on after it was opened: what was emptied is the directory underneath.
                skip(emptied.parent.pathOf(emptied.shownName))
            } else if errno != ENOTEMPTY || failures.isEmpty {
                // ENOTEMPTY after a failure inside is already reported by that failure.
                fail(emptied.parent.pathOf(emptied.shownName), "cannot remove directory")
            }
        }
    }

    /// Removes everything inside `directory`, keeping the entries named in `keeping`.
    package mutating func removeContents(of directory: OpenDirectory, keeping: Set<String> = []) throws {
        guard admits(directory) else { return }
        for entry in try entriesToRemove(in: directory, keeping: keeping) {
            try remove(entry.rawName, shownAs: entry.name, type: entry.type, in: directory)
        }
    }

    /// A directory being emptied: its entries go one by one, then the directory itself.
    private struct Level {
        var parent: OpenDirectory
        /// The NUL-terminated name's bytes, as listed.
        var name: [CChar]
        var shownName: String
        var directory: OpenDirectory
        var entries: [OpenDirectory.Entry]
        var next = 0
        var freed: ByteCount
    }

    /// Removes `name` when it is not a directory; opens and lists it when it is, for the caller
    /// to empty and then remove. `nil` when nothing is left to do.
    ///
    /// Every system call gets the name's bytes as listed: a name that is not valid UTF-8 is
    /// removed as itself, never as its look-alike (another file, or none).
    private mutating func removeOrOpen(
        _ name: [CChar],
        shownAs shown: String,
        type: UInt8,
        in parent: OpenDirectory
    ) throws -> Level? {
        try cancellation?.check()
        var isDirectory = type == UInt8(DT_DIR)
        var freed = ByteCount.zero
        if type == UInt8(DT_UNKNOWN) || measuresFreedBytes {
            guard let status = FileStatus.at(parent.descriptor, name) else {
                if errno != ENOENT { fail(parent.pathOf(shown), "cannot examine") }
                return nil
            }
            isDirectory = status.type == .directory
            if measuresFreedBytes && (isDirectory || status.linkCount <= 1) {
                freed = ByteCount(status.allocatedBytes)
            }
        }
        if !isDirectory {
            StoreGeneration.retireStores(named: [shown], in: parent.descriptor)
            if unlinkat(parent.descriptor, name, 0) == 0 {
                removed(freeing: freed)
                return nil
            }
            // A file bind-mounted over this one (Linux refuses to unlink a mount point).
            if errno == EBUSY, isOutside(name, in: parent) {
                skip(parent.pathOf(shown))
                return nil
            }
            // Linux says EISDIR, POSIX allows EPERM, for a directory.
            guard errno == EISDIR || errno == EPERM, FileStatus.at(parent.descriptor, name)?.type == .directory else {
                if errno != ENOENT { fail(parent.pathOf(shown), "cannot remove") } else { removed() }
                return nil
            }
        }
        let child = openat(parent.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard child >= 0 else {
            if errno == ELOOP || errno == ENOTDIR {
                // Replaced by a link or a file since it was listed: remove that, never follow it.
                return try removeOrOpen(name, shownAs: shown, type: UInt8(DT_REG), in: parent)
            } else if errno != ENOENT {
                // A mount point this process may not open (another user's volume, mode 000:
                // EACCES) is still told apart by its status, which needs no permission on it: it
                // is another file system's, skipped and named as such, not a failure to remove.
                if isOutside(name, in: parent) {
                    skip(parent.pathOf(shown))
                } else {
                    fail(parent.pathOf(shown), "cannot open directory")
                }
            }
            return nil
        }
        let directory = OpenDirectory(descriptor: child, path: parent.pathOf(shown), boundary: boundary)
        // Judged by the descriptor just opened: a mount point, or a directory swapped for one
        // since it was listed, is left whole with everything under it.
        guard directory.isInsideBoundary else {
            skip(directory.path)
            return nil
        }
        let entries = try entriesToRemove(in: directory)
        return Level(parent: parent, name: name, shownName: shown, directory: directory, entries: entries, freed: freed)
    }

    /// The entries of `directory` not named in `keeping`, their stores retired first so that no
    /// open handle serves what is about to go (see StoreGeneration); none, with a failure, when
    /// the directory cannot be read.
    private mutating func entriesToRemove(
        in directory: OpenDirectory,
        keeping: Set<String> = []
    ) throws -> [OpenDirectory.Entry] {
        let entries: [OpenDirectory.Entry]
        do {
            // Every name, decodable or not: removal acts through each entry's own bytes.
            entries = try directory.entries(includingUndecodable: true).filter { !keeping.contains($0.name) }
        } catch let error as StowageError {
            failures.append(.init(path: directory.path, message: error.message))
            return []
        }
        StoreGeneration.retireStores(named: entries.map(\.name), in: directory.descriptor)
        return entries
    }

    private mutating func removed(freeing freed: ByteCount = .zero) {
        removedCount += 1
        bytesFreed += freed
        onRemoved(removedCount)
    }

    private func isOutside(_ name: [CChar], in parent: OpenDirectory) -> Bool {
        name.withUnsafeBufferPointer { boundary?.isOutside($0.baseAddress!, in: parent.descriptor) ?? false }
    }

    /// Leaves `path`, on another file system or mount, in place, and says so.
    private mutating func skip(_ path: String) {
        let skipped = ClearReport.Failure(path: path, message: FileSystemBoundary.skipMessage)
        // Named once however many of a clean task's entries sit in it.
        if !failures.contains(skipped) { failures.append(skipped) }
    }

    private mutating func fail(_ path: String, _ what: String) {
        failures.append(.init(path: path, message: "\(what): \(Errno.current)"))
    }
}
