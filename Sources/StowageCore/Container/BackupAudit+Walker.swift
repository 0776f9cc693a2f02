import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Container {
    /// Audits what a backup of the container would copy (see ``BackupAudit``), creating missing
    /// locations with their marks first, as ``report(reserves:backupAudit:)`` does.
    ///
    /// - Parameter configuration: The thresholds; Apple's storage guide's 10 MB and 100 MB by default.
    /// - Returns: The audit; entries that could not be read are in each location's `issues`.
    /// - Throws: ``StowageError`` with code `.invalidArgument` for a negative threshold or limit,
    ///   or when a location cannot be created or examined; `CancellationError` when the task is
    ///   cancelled (checked per directory).
    public func auditBackups(
        configuration: BackupAudit.Configuration = BackupAudit.Configuration()
    ) async throws -> BackupAudit {
        try configuration.validate()
        var directories: [(Location, String)] = []
        for location in Location.allCases {
            directories.append((location, try await directory(for: location).fileSystemPath))
        }
        let rootPath = root?.fileSystemPath
        let cancellation = CancellationFlag()
        return try await withTaskCancellationHandler { [directories] in
            try await BlockingWork.run {
                var walker = BackupAuditWalker(configuration: configuration, cancellation: cancellation)
                var locations: [BackupAudit.LocationAudit] = []
                for (location, path) in directories {
                    locations.append(
                        try walker.audit(location, at: path, shownAs: Self.shownPath(path, root: rootPath))
                    )
                }
                return BackupAudit(
                    configuration: configuration,
                    locations: locations,
                    largeFiles: walker.largeFiles,
                    largeFileCount: walker.largeFileCount
                )
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// A location's directory as large files name it: below the root when rooted, else absolute.
    private static func shownPath(_ path: String, root: String?) -> String {
        guard let root else { return path }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }
}

/// The walk behind ``BackupAudit``, one location after the other.
///
/// Like ``DiskUsage``'s walk it reads each directory through a descriptor opened relative to its
/// parent's with `O_NOFOLLOW` and examines entries with `fstatat(…, AT_SYMLINK_NOFOLLOW)`.
///
/// Deciding whether an entry is excluded reads its mark through a descriptor of the entry itself
/// (`fgetxattr`), so the mark read is the entry's own whatever its name's bytes and however long
/// its path: the directory's descriptor the walk opens anyway, and for a regular file not already
/// inside an excluded subtree one `openat(…, O_NOFOLLOW | O_NONBLOCK)` checked against the
/// examined identity. A directory not yet excluded costs one `openat` of `CACHEDIR.TAG` too.
/// FIFOs, sockets, devices and links are never opened: they are counted from their status alone.
struct BackupAuditWalker {
    private let configuration: BackupAudit.Configuration
    private let cancellation: CancellationFlag?
    /// Files with more than one link seen in the current location, so each is counted once.
    private var seenLinks = Set<FileIdentity>()
    private var issues: [DiskUsage.Issue] = []
    private(set) var largeFiles: [BackupAudit.LargeFile] = []
    private(set) var largeFileCount = 0

    init(configuration: BackupAudit.Configuration, cancellation: CancellationFlag?) {
        self.configuration = configuration
        self.cancellation = cancellation
    }

    /// The figures of `location`, whose directory is `path`; large files are named
    /// `shownAs/relative/path`.
    mutating func audit(
        _ location: Location,
        at path: String,
        shownAs shown: String
    ) throws -> BackupAudit.LocationAudit {
        seenLinks.removeAll()
        issues.removeAll()
        var status = stat()
        guard lstat(path, &status) == 0 else { throw StowageError.syscall(.current, "audit", path: path) }
        var backedUp = DiskUsage.Totals()
        var excluded = DiskUsage.Totals()
        var isExcluded = !location.isBackedUp
        let descriptor =
            FileType(status) == .directory ? open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1
        if descriptor >= 0 {
            isExcluded =
                isExcluded || excludes(Self.mark(of: descriptor), path)
                || CacheDirectoryTag.isPresent(inDirectory: descriptor)
            Self.tally(status, isExcluded, &backedUp, &excluded)
            let directory = Directory(location: location, path: path, shown: shown, isExcluded: isExcluded)
            try walk(descriptor, directory, backedUp: &backedUp, excluded: &excluded)
        } else {
            if FileType(status) == .directory { report(path, "cannot read directory", .current) }
            isExcluded = isExcluded || markedExcluded(atPath: path)
            Self.tally(status, isExcluded, &backedUp, &excluded)
        }
        return BackupAudit.LocationAudit(
            location: location,
            isExcluded: isExcluded,
            backedUp: backedUp,
            excluded: excluded,
            issues: issues
        )
    }

    /// The directory being read: where it is, how large files below it are named, and whether
    /// it is inside an excluded subtree.
    private struct Directory {
        var location: Location
        var path: String
        var shown: String
        var isExcluded: Bool

        func child(_ name: String, isExcluded: Bool) -> Directory {
            Directory(location: location, path: path + "/" + name, shown: shown + "/" + name, isExcluded: isExcluded)
        }
    }

    /// Reads the directory open at `descriptor` (closed here) and adds every entry below it.
    private mutating func walk(
        _ descriptor: Int32,
        _ directory: Directory,
        backedUp: inout DiskUsage.Totals,
        excluded: inout DiskUsage.Totals
    ) throws {
        defer { close(descriptor) }
        try cancellation?.check()
        do {
            try OpenDirectory.forEachEntry(in: descriptor, path: directory.path) { name, _ in
                try add(name, in: descriptor, directory, backedUp: &backedUp, excluded: &excluded)
            }
        } catch let error as StowageError {
            report(directory.path, "cannot read directory", (error.cause as? Errno) ?? .current)
        }
    }

    private mutating func add(
        _ cName: UnsafePointer<CChar>,
        in descriptor: Int32,
        _ directory: Directory,
        backedUp: inout DiskUsage.Totals,
        excluded: inout DiskUsage.Totals
    ) throws {
        var status = stat()
        guard fstatat(descriptor, cName, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno != ENOENT { report(directory.path + "/" + String(cString: cName), "cannot examine", .current) }
            return
        }
        let type = FileType(status)
        if type != .directory && status.st_nlink > 1 {
            guard seenLinks.insert(FileIdentity(status)).inserted else { return }
        }
        // Inside an excluded subtree nothing needs a name: the whole subtree is skipped by backups.
        let name = directory.isExcluded && type != .directory ? "" : String(cString: cName)
        var isExcluded = directory.isExcluded
        if type == .directory {
            let child = openat(descriptor, cName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child < 0 {
                // Its mark cannot be read either: counted as a backup tool would copy it.
                if errno != ENOENT { report(directory.path + "/" + name, "cannot read directory", .current) }
                Self.tally(status, isExcluded, &backedUp, &excluded)
                return
            }
            isExcluded =
                isExcluded || excludes(Self.mark(of: child), directory.path + "/" + name)
                || CacheDirectoryTag.isPresent(inDirectory: child)
            Self.tally(status, isExcluded, &backedUp, &excluded)
            try walk(child, directory.child(name, isExcluded: isExcluded), backedUp: &backedUp, excluded: &excluded)
            return
        }
        if type == .regular && !isExcluded {
            isExcluded = excludes(
                Self.mark(ofFile: cName, in: descriptor, examined: status),
                directory.path + "/" + name
            )
        }
        Self.tally(status, isExcluded, &backedUp, &excluded)
        let allocated = ByteCount(Int64(status.st_blocks) * 512)
        if type == .regular && !isExcluded && allocated > configuration.largeFileThreshold {
            consider(
                BackupAudit.LargeFile(
                    location: directory.location,
                    path: directory.shown + "/" + name,
                    allocatedBytes: allocated,
                    logicalBytes: ByteCount(Int64(status.st_size))
                )
            )
        }
    }

    /// An item's backup mark: whether it is `false` (the item is excluded), or why it could not
    /// be read.
    private enum Mark {
        case read(isExcluded: Bool)
        case unreadable(String)
    }

    /// The mark of the item open at `descriptor`.
    private static func mark(of descriptor: Int32) -> Mark {
        do {
            // The message is the walk's own, with the path it knows; only the cause is kept.
            return .read(isExcluded: try Marks.isExcludedFromBackup(descriptor: descriptor, path: ""))
        } catch let error as StowageError {
            return .unreadable("cannot read the backup mark: \((error.cause as? Errno) ?? .current)")
        } catch {
            return .unreadable("cannot read the backup mark: \(error)")
        }
    }

    /// The mark of the regular file `name` of the directory open at `directory`, read through a
    /// descriptor of the file, opened without following a link nor blocking, and only when it is
    /// still the file that was examined (`examined`).
    private static func mark(ofFile name: UnsafePointer<CChar>, in directory: Int32, examined: stat) -> Mark {
        let descriptor = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            // Gone since it was examined: nothing is left to back up, nor a mark to read.
            return errno == ENOENT
                ? .read(isExcluded: false) : .unreadable("cannot read the backup mark: \(Errno.current)")
        }
        defer { close(descriptor) }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0, FileIdentity(opened) == FileIdentity(examined) else {
            return .unreadable("cannot read the backup mark: replaced while it was examined")
        }
        return mark(of: descriptor)
    }

    /// Whether `mark` excludes the item at `path`; an unreadable mark is an issue and counts as
    /// not excluded, as a backup tool would copy the item.
    private mutating func excludes(_ mark: Mark, _ path: String) -> Bool {
        switch mark {
        case .read(let isExcluded):
            return isExcluded
        case .unreadable(let message):
            issues.append(DiskUsage.Issue(path: path, message: message))
            return false
        }
    }

    /// The location's directory's mark, read by its path when it cannot be opened.
    private mutating func markedExcluded(atPath path: String) -> Bool {
        do {
            return try Marks.isExcludedFromBackup(atPath: path)
        } catch let error as StowageError {
            report(path, "cannot read the backup mark", (error.cause as? Errno) ?? .current)
            return false
        } catch {
            return false
        }
    }

    /// Keeps the largest files, largest first, without sorting every candidate.
    private mutating func consider(_ file: BackupAudit.LargeFile) {
        largeFileCount += 1
        let limit = configuration.maximumListedFiles
        guard limit > 0 else { return }
        if largeFiles.count == limit, let last = largeFiles.last, !Self.precedes(file, last) { return }
        let index = largeFiles.firstIndex { Self.precedes(file, $0) } ?? largeFiles.endIndex
        largeFiles.insert(file, at: index)
        if largeFiles.count > limit { largeFiles.removeLast() }
    }

    private static func precedes(_ lhs: BackupAudit.LargeFile, _ rhs: BackupAudit.LargeFile) -> Bool {
        lhs.allocatedBytes != rhs.allocatedBytes ? lhs.allocatedBytes > rhs.allocatedBytes : lhs.path < rhs.path
    }

    /// Counts the entry into `excluded` or `backedUp`.
    private static func tally(
        _ status: stat,
        _ isExcluded: Bool,
        _ backedUp: inout DiskUsage.Totals,
        _ excluded: inout DiskUsage.Totals
    ) {
        if isExcluded { excluded.count(status) } else { backedUp.count(status) }
    }

    private mutating func report(_ path: String, _ what: String, _ errno: Errno) {
        issues.append(DiskUsage.Issue(path: path, message: "\(what): \(errno)"))
    }
}
