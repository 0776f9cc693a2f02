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
/// parent's with `O_NOFOLLOW`, examines entries with `fstatat(…, AT_SYMLINK_NOFOLLOW)`, and keeps
/// the directories being read on a stack of its own, each listed in full when it is opened
/// (``ListedNames``): a tree thousands of levels deep costs one descriptor per level, never the
/// thread's stack, and where descriptors run out (`EMFILE`) the directory is an issue.
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
    /// The location being audited, its directory's path, and how large files below it are named.
    private var location = Location.documents
    private var rootPath = ""
    private var rootShown = ""
    /// The directories from the location's down to the one being read.
    private var levels: [Level] = []
    /// The location directory's file system and mount: the walk stays on it, as `du -x` does
    /// (and bind mounts of the same device too: ``FileSystemBoundary``), so a location's figures
    /// add up to the usage the container report gives it.
    private var boundary: FileSystemBoundary?

    /// A directory being read: its names, the next one to examine, and whether it is inside an
    /// excluded subtree.
    private struct Level {
        /// Its name in its parent, for paths; unused at the top.
        var name: String
        var descriptor: Int32
        var isExcluded: Bool
        var names = ListedNames()
        var next = 0
    }

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
        (self.location, rootPath, rootShown) = (location, path, shown)
        var status = stat()
        guard lstat(path, &status) == 0 else { throw StowageError.syscall(.current, "audit", path: path) }
        var backedUp = DiskUsage.Totals()
        var excluded = DiskUsage.Totals()
        var isExcluded = !location.isBackedUp
        let descriptor =
            FileType(status) == .directory ? open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1
        boundary = nil
        if descriptor >= 0 {
            boundary = FileSystemBoundary(descriptor: descriptor)
            defer {  // when cancelled
                levels.forEach { close($0.descriptor) }
                levels.removeAll()
            }
            isExcluded =
                isExcluded || excludes(Self.mark(of: descriptor), nil)
                || CacheDirectoryTag.isPresent(inDirectory: descriptor)
            Self.tally(status, isExcluded, &backedUp, &excluded)
            try push("", descriptor, isExcluded: isExcluded)
            try walk(backedUp: &backedUp, excluded: &excluded)
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

    /// Reads the directories on ``levels`` to the end, deepest first.
    private mutating func walk(backedUp: inout DiskUsage.Totals, excluded: inout DiskUsage.Totals) throws {
        while let top = levels.indices.last {
            let level = levels[top]
            guard level.next < level.names.count else {
                close(level.descriptor)
                levels.removeLast()
                continue
            }
            levels[top].next += 1
            try level.names.withName(at: level.next) {
                try add($0, in: level, backedUp: &backedUp, excluded: &excluded)
            }
        }
    }

    /// Pushes the directory open at `descriptor` with its names; with none, and an issue, when
    /// it cannot be listed.
    private mutating func push(_ name: String, _ descriptor: Int32, isExcluded: Bool) throws {
        levels.append(Level(name: name, descriptor: descriptor, isExcluded: isExcluded))
        let path = currentPath
        do {
            try cancellation?.check()
            try ListedNames.read(descriptor, path: path, into: &levels[levels.count - 1].names)
        } catch let error as StowageError {
            report(path, "cannot read directory", (error.cause as? Errno) ?? .current)
        }
    }

    /// Counts the entry `name` of `directory` (the top of ``levels``), or pushes it when it is a
    /// directory to read.
    private mutating func add(
        _ name: UnsafePointer<CChar>,
        in directory: Level,
        backedUp: inout DiskUsage.Totals,
        excluded: inout DiskUsage.Totals
    ) throws {
        var status = stat()
        guard fstatat(directory.descriptor, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno != ENOENT { report(path(of: name), "cannot examine", .current) }
            return
        }
        // On another file system: neither counted nor entered, as `du -x` (checked by st_dev
        // here, by the mount ID for a directory once it is open).
        if let boundary, FileIdentity.device(of: status) != boundary.device { return }
        let type = FileType(status)
        if type != .directory && status.st_nlink > 1 {
            guard seenLinks.insert(FileIdentity(status)).inserted else { return }
        }
        var isExcluded = directory.isExcluded
        if type == .directory {
            let child = openat(directory.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0, let boundary, !boundary.contains(descriptor: child) {
                close(child)
                return
            }
            if child < 0 {
                // Its mark cannot be read either: counted as a backup tool would copy it.
                if errno != ENOENT { report(path(of: name), "cannot read directory", .current) }
                Self.tally(status, isExcluded, &backedUp, &excluded)
                return
            }
            isExcluded =
                isExcluded || excludes(Self.mark(of: child), name)
                || CacheDirectoryTag.isPresent(inDirectory: child)
            Self.tally(status, isExcluded, &backedUp, &excluded)
            try push(String(cString: name), child, isExcluded: isExcluded)
            return
        }
        if type == .regular && !isExcluded {
            isExcluded = excludes(Self.mark(ofFile: name, in: directory.descriptor, examined: status), name)
        }
        Self.tally(status, isExcluded, &backedUp, &excluded)
        let allocated = ByteCount(Int64(status.st_blocks) * 512)
        if type == .regular && !isExcluded && allocated > configuration.largeFileThreshold {
            consider(
                BackupAudit.LargeFile(
                    location: location,
                    path: shownPath(of: name),
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

    /// Whether `mark` excludes the entry `name` of the directory being read (the location's
    /// directory itself for `nil`); an unreadable mark is an issue and counts as not excluded,
    /// as a backup tool would copy the item.
    private mutating func excludes(_ mark: Mark, _ name: UnsafePointer<CChar>?) -> Bool {
        switch mark {
        case .read(let isExcluded):
            return isExcluded
        case .unreadable(let message):
            issues.append(DiskUsage.Issue(path: name.map { path(of: $0) } ?? rootPath, message: message))
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

    /// The names of the directories below the location's, down to the one being read.
    private var components: some Sequence<String> { levels.dropFirst().lazy.map(\.name) }

    /// The path of the directory at the top of ``levels``.
    private var currentPath: String { ([rootPath] + components).joined(separator: "/") }

    private func path(of name: UnsafePointer<CChar>) -> String {
        ([rootPath] + components + [String(cString: name)]).joined(separator: "/")
    }

    private func shownPath(of name: UnsafePointer<CChar>) -> String {
        ([rootShown] + components + [String(cString: name)]).joined(separator: "/")
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
