import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The work of one sweep or reset of one registered directory, on the calling thread.
///
/// The directory is resolved inside its container location without following links out of it
/// (``ConfinedResolver``), then walked through directory descriptors: each file is examined
/// once with `statx`, removed at once with `unlinkat` when it is older than the policy, else
/// kept in a list for the cap. Over the cap, that list is ordered by ``FileTimestamp`` and the
/// oldest files are removed until the directory is at half of the cap (`APPurgeablePath`'s rule).
/// Directories are never removed by a sweep: the app may expect them to exist.
struct PurgeSweep {
    let container: Container
    let ageTimestamp: FileTimestamp
    let capOrder: FileTimestamp
    /// Seconds since 1970, from the injected clock.
    let now: Double
    let cancellation: CancellationFlag?

    /// Sweeps one directory. Throws `CancellationError` only; other problems are in the report.
    /// At the time limit the walk stops between two files and the report says what was done
    /// (``PurgeReport/Directory/reachedTimeLimit``; `remainingBytes` then counts only what was
    /// examined).
    func sweep(_ registration: PurgeableDirectory) throws -> PurgeReport.Directory {
        var report = PurgeReport.Directory(starting: registration)
        guard let root = open(registration, into: &report) else { return report }
        var walk = SweepWalk(
            cutoff: registration.policy.maximumAge.map { now - $0 },
            keepsSurvivors: registration.sizeCap != nil,
            ageTimestamp: ageTimestamp,
            capOrder: capOrder,
            cancellation: cancellation
        )
        do {
            try walk.walk(root, index: 0)
            if let cap = registration.sizeCap, walk.remainingBytes > cap.rawValue {
                try walk.trim(toBytes: cap.rawValue / 2, root: root)
            }
        } catch is TimeLimitReached {
            report.reachedTimeLimit = true
        }
        report.removedForAge = walk.removedForAge
        report.removedForCap = walk.removedForCap
        report.bytesFreed = ByteCount(walk.bytesFreed)
        report.remainingBytes = ByteCount(walk.remainingBytes)
        report.failures = walk.failures
        return report
    }

    /// Empties one directory (reset-all, clear), keeping the directory itself.
    func empty(_ registration: PurgeableDirectory) throws -> PurgeReport.Directory {
        var report = PurgeReport.Directory(starting: registration)
        guard let root = open(registration, into: &report) else { return report }
        // The caches location's own tag stays, as Container.clear keeps it.
        let keeping: Set<String> = root.path == container.url(for: .caches).fileSystemPath ? ["CACHEDIR.TAG"] : []
        // The removal measures each entry as it goes, under the time limit's checks: a measure of
        // the whole tree first spent the limit without removing anything and let its
        // TimeLimitReached escape the report, and it counted a file whose other link is outside
        // the directory as freed, though its blocks stay with that link.
        var removal = TreeRemoval(cancellation: cancellation, measuresFreedBytes: true)
        do {
            try removal.removeContents(of: root, keeping: keeping)
        } catch is TimeLimitReached {
            report.reachedTimeLimit = true
        }
        // Measured without the limit (cancellation still stops it): what is left is part of the
        // answer, and a limit passing now must not throw away the report of what was removed.
        var after = TreeMeasure(cancellation: cancellation.map { CancellationFlag(parent: $0, deadline: nil) })
        let bytesAfter = try ((try? root.entries()) ?? []).filter { !keeping.contains($0.name) }.reduce(Int64(0)) {
            $0 + (try after.measure($1.name, in: root)).bytes
        }
        report.removedByReset = removal.removedCount
        report.bytesFreed = removal.bytesFreed
        report.remainingBytes = ByteCount(bytesAfter)
        report.failures = removal.failures
        return report
    }

    /// Resolves the registered path; `nil` (with the report filled) when there is nothing to do.
    private func open(_ registration: PurgeableDirectory, into report: inout PurgeReport.Directory) -> OpenDirectory? {
        let subject = "purgeable directory \(PathInput.quoted(registration.path))"
        do {
            let path = try ContainerPath(parsing: registration.path, subject: subject)
            report.fileSystemPath = path.url(in: container).fileSystemPath
            switch try ConfinedResolver.resolve(path, in: container, subject: subject) {
            case .directory(let directory):
                // A registered directory that is a mount, or under one, is another file system's.
                guard directory.isInsideBoundary else {
                    report.failures.append(.init(path: directory.path, message: FileSystemBoundary.skipMessage))
                    return nil
                }
                return directory
            case .missing:
                return nil
            case .entry(let parent, let name):
                report.error =
                    "\(subject): '\(parent.pathOf(name))' is not a directory; move it away or unregister the path"
                return nil
            }
        } catch {
            report.error = (error as? StowageError)?.message ?? "\(error)"
            return nil
        }
    }
}

/// The walk of one sweep: removals by age as it goes, survivors kept for the cap.
private struct SweepWalk {
    struct Survivor {
        var directory: Int
        var name: String
        var time: Double
        var bytes: Int64
        var isLastLink: Bool
    }

    let cutoff: Double?
    let keepsSurvivors: Bool
    let ageTimestamp: FileTimestamp
    let capOrder: FileTimestamp
    let cancellation: CancellationFlag?

    /// Directories seen, index 0 being the root: parent index and name, to reopen them.
    var directories: [(parent: Int, name: String)] = [(-1, "")]
    var survivors: [Survivor] = []
    var seenLinks = Set<FileIdentity>()
    var removedForAge = 0
    var removedForCap = 0
    var bytesFreed: Int64 = 0
    var remainingBytes: Int64 = 0
    var failures: [ClearReport.Failure] = []

    /// Walks the tree below `root` (directory `rootIndex`). Directories wait on a stack of the
    /// walk's own, opened when their turn comes, not on the thread's: a tree thousands of levels
    /// deep never overflows the stack (as the removal, measure and disk-usage walks do), and a
    /// directory is held open only while names of it are pending.
    mutating func walk(_ root: OpenDirectory, index rootIndex: Int) throws {
        var pending: [(parent: OpenDirectory?, name: String, index: Int)] = [(nil, "", rootIndex)]
        while let next = pending.popLast() {
            let directory: OpenDirectory
            if let parent = next.parent {
                guard let child = parent.openChild(next.name) else {
                    if errno != ENOENT {
                        // A mount point it may not open (EACCES) is still told apart by its
                        // status, which needs no permission on it: another file system's.
                        let isOutside = next.name.withCString { name in
                            parent.boundary?.isOutside(name, in: parent.descriptor) ?? false
                        }
                        if isOutside {
                            skip(parent.pathOf(next.name))
                        } else {
                            fail(parent.pathOf(next.name), "cannot open directory")
                        }
                    }
                    continue
                }
                // A mount point is left whole, as `rm --one-file-system` leaves it.
                guard child.isInsideBoundary else {
                    skip(child.path)
                    continue
                }
                directory = child
            } else {
                directory = root
            }
            for name in try walkEntries(of: directory, index: next.index) {
                directories.append((next.index, name))
                pending.append((directory, name, directories.count - 1))
            }
        }
    }

    /// Examines the entries of one directory, files by age and for the cap.
    ///
    /// - Returns: The names of its subdirectories, for the walk to visit.
    private mutating func walkEntries(of directory: OpenDirectory, index: Int) throws -> [String] {
        let entries: [OpenDirectory.Entry]
        do {
            entries = try directory.entries()
        } catch {
            failures.append(.init(path: directory.path, message: (error as? StowageError)?.message ?? "\(error)"))
            return []
        }
        var subdirectories: [String] = []
        for entry in entries {
            try cancellation?.check()
            guard let status = FileStatus.at(directory.descriptor, entry.name) else {
                if errno != ENOENT { fail(directory.pathOf(entry.name), "cannot examine") }
                continue
            }
            if status.type == .directory {
                subdirectories.append(entry.name)
                continue
            }
            // A file bind-mounted over one of the directory's.
            guard directory.boundary?.contains(status) ?? true else {
                skip(directory.pathOf(entry.name))
                continue
            }
            let isLastLink = status.linkCount <= 1
            // A file with several links takes its space once.
            let bytes = isLastLink || seenLinks.insert(status.identity).inserted ? status.allocatedBytes : 0
            if let cutoff, ageTimestamp.seconds(of: status) < cutoff {
                if unlinkat(directory.descriptor, entry.name, 0) == 0 {
                    removedForAge += 1
                    if isLastLink { bytesFreed += bytes }
                    continue
                }
                if errno == ENOENT { continue }
                fail(directory.pathOf(entry.name), "cannot remove")
            }
            remainingBytes += bytes
            if keepsSurvivors {
                survivors.append(
                    Survivor(
                        directory: index,
                        name: entry.name,
                        time: capOrder.seconds(of: status),
                        bytes: bytes,
                        isLastLink: isLastLink
                    )
                )
            }
        }
        return subdirectories
    }

    /// Removes the oldest survivors until at most `target` bytes remain.
    mutating func trim(toBytes target: Int64, root: OpenDirectory) throws {
        var chosen: [Int] = []
        var total = remainingBytes
        for index in survivors.indices.sorted(by: { survivors[$0].time < survivors[$1].time }) {
            guard total > target else { break }
            chosen.append(index)
            total -= survivors[index].bytes
        }
        // One reopening per directory; directories in walk order.
        let byDirectory = Dictionary(grouping: chosen) { survivors[$0].directory }
        for directoryIndex in byDirectory.keys.sorted() {
            try cancellation?.check()
            guard let directory = reopen(directoryIndex, root: root) else {
                fail(root.path, "cannot reopen a subdirectory to trim it")
                continue
            }
            for index in byDirectory[directoryIndex]! {
                try cancellation?.check()
                let survivor = survivors[index]
                if unlinkat(directory.descriptor, survivor.name, 0) == 0 {
                    removedForCap += 1
                    remainingBytes -= survivor.bytes
                    if survivor.isLastLink { bytesFreed += survivor.bytes }
                } else if errno == ENOENT {
                    // Removed by someone else since the walk: no longer here, but neither removed
                    // nor freed by this sweep (the marked items' rule, MarkedItemsWalk's .gone).
                    remainingBytes -= survivor.bytes
                } else {
                    fail(directory.pathOf(survivor.name), "cannot remove")
                }
            }
        }
    }

    /// Opens a directory seen by the walk again, from the root, never following a link: one
    /// `openat` per level, in a loop rather than a recursion (a deep tree's chain is long).
    private func reopen(_ index: Int, root: OpenDirectory) -> OpenDirectory? {
        var names: [String] = []
        var current = index
        while current > 0 {
            names.append(directories[current].name)
            current = directories[current].parent
        }
        var directory = root
        for name in names.reversed() {
            // Mounted on since the walk: not this sweep's to trim.
            guard let child = directory.openChild(name), child.isInsideBoundary else { return nil }
            directory = child
        }
        return directory
    }

    private mutating func fail(_ path: String, _ what: String) {
        failures.append(.init(path: path, message: "\(what): \(Errno.current)"))
    }

    /// Leaves `path`, on another file system or mount, in place, and says so.
    private mutating func skip(_ path: String) {
        failures.append(.init(path: path, message: FileSystemBoundary.skipMessage))
    }
}
