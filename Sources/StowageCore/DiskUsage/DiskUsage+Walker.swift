#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The depth-first walk behind ``DiskUsage``.
///
/// Each directory is read through a descriptor opened relative to its parent's with
/// `O_NOFOLLOW`, and each entry is examined with `fstatat(…, AT_SYMLINK_NOFOLLOW)`: no path is
/// built or resolved per file, which is where FileManager's enumerator loses its time, and no
/// symbolic link is ever followed. Only directories that are descended into get a `String`
/// name, kept so that an issue can say which path it is about.
struct TreeWalker {
    private let rootPath: String
    private let options: DiskUsage.Options
    private let cancellation: CancellationFlag?
    private var rootDevice: UInt64 = 0
    /// Files with more than one link seen so far, so each is counted once (like `du`).
    private var seenLinks = Set<FileIdentity>()
    private var issues: [DiskUsage.Issue] = []
    /// Names from the root down to the directory being read, for issue paths.
    private var components: [String] = []

    init(rootPath: String, options: DiskUsage.Options, cancellation: CancellationFlag?) throws {
        guard !rootPath.isEmpty else {
            throw StowageError.invalidArgument("cannot measure an empty path; pass a file or directory URL")
        }
        self.rootPath = rootPath
        self.options = options
        self.cancellation = cancellation
    }

    mutating func run() throws -> DiskUsage {
        var status = stat()
        guard lstat(rootPath, &status) == 0 else {
            throw StowageError.syscall(.current, "measure", path: rootPath)
        }
        rootDevice = FileIdentity.device(of: status)
        var totals = DiskUsage.Totals()
        totals.count(status)
        var children: [DiskUsage.Child]? = options.includesChildren ? [] : nil
        if FileType(status) == .directory {
            let descriptor = open(rootPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if descriptor < 0 {
                report(rootPath, "cannot read directory", .current)
            } else {
                try walk(descriptor, into: &totals, recordingChildren: &children)
            }
        }
        return DiskUsage(path: rootPath, totals: totals, children: children ?? [], issues: issues)
    }

    /// Reads the directory open at `descriptor` (which this call closes) and adds every entry
    /// below it to `totals`.
    private mutating func walk(
        _ descriptor: Int32,
        into totals: inout DiskUsage.Totals,
        recordingChildren children: inout [DiskUsage.Child]?
    ) throws {
        defer { close(descriptor) }
        try cancellation?.check()
        do {
            try OpenDirectory.forEachEntry(in: descriptor, path: currentPath) { name, _ in
                try add(name, in: descriptor, to: &totals, recordingChildren: &children)
            }
        } catch let error as StowageError {
            report(currentPath, "cannot read directory", (error.cause as? Errno) ?? .current)
        }
    }

    /// Adds the entry `name` of the directory open at `descriptor`, and what is below it.
    private mutating func add(
        _ name: UnsafePointer<CChar>,
        in descriptor: Int32,
        to totals: inout DiskUsage.Totals,
        recordingChildren children: inout [DiskUsage.Child]?
    ) throws {
        // Checked before fstatat, as du checks --exclude before it looks at the entry: an
        // excluded name costs no system call, and with no patterns this is one emptiness test.
        if !options.excluding.isEmpty && isExcluded(name) { return }
        var status = stat()
        guard fstatat(descriptor, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
            // An entry deleted between readdir and fstatat simply no longer takes space.
            if errno != ENOENT { report(path(of: name), "cannot examine", .current) }
            return
        }
        if options.staysOnFileSystem && FileIdentity.device(of: status) != rootDevice { return }
        let type = FileType(status)
        if type != .directory && status.st_nlink > 1 {
            guard seenLinks.insert(FileIdentity(status)).inserted else { return }
        }

        var entryTotals = DiskUsage.Totals()
        entryTotals.count(status)
        if type == .directory {
            let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child < 0 {
                if errno != ENOENT { report(path(of: name), "cannot read directory", .current) }
            } else {
                var noChildren: [DiskUsage.Child]? = nil
                components.append(String(cString: name))
                defer { components.removeLast() }
                try walk(child, into: &entryTotals, recordingChildren: &noChildren)
            }
        }
        if children != nil {
            children?.append(
                DiskUsage.Child(name: String(cString: name), isDirectory: type == .directory, totals: entryTotals)
            )
        }
        totals.add(entryTotals)
    }

    private func isExcluded(_ name: UnsafePointer<CChar>) -> Bool {
        for pattern in options.excluding where pattern.matches(name) { return true }
        return false
    }

    private var currentPath: String {
        components.isEmpty ? rootPath : joined(rootPath, components.joined(separator: "/"))
    }

    private func path(of name: UnsafePointer<CChar>) -> String {
        joined(currentPath, String(cString: name))
    }

    private func joined(_ base: String, _ name: String) -> String {
        base.hasSuffix("/") ? base + name : base + "/" + name
    }

    private mutating func report(_ path: String, _ what: String, _ errno: Errno) {
        issues.append(DiskUsage.Issue(path: path, message: "\(what): \(errno)"))
    }
}

/// The kinds of entry a walk distinguishes, from `st_mode`.
package enum FileType: Equatable {
    case directory, regular, other

    package init(_ status: stat) {
        // S_IFMT / S_IFDIR / S_IFREG have these values on Linux and Darwin alike.
        switch UInt32(status.st_mode) & 0o170000 {
        case 0o040000: self = .directory
        case 0o100000: self = .regular
        default: self = .other
        }
    }
}

/// A file's identity on its device: what makes two hard links the same file.
package struct FileIdentity: Hashable {
    package var device: UInt64
    package var inode: UInt64

    package init(_ status: stat) {
        device = Self.device(of: status)
        inode = UInt64(status.st_ino)
    }

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    package static func device(of status: stat) -> UInt64 {
        UInt64(truncatingIfNeeded: status.st_dev)
    }
}

extension DiskUsage.Totals {
    /// Adds one entry as `du` counts it: its allocated blocks, its size if a regular file, and
    /// one to its kind's count.
    mutating func count(_ status: stat) {
        allocatedBytes.rawValue += Int64(status.st_blocks) * 512
        switch FileType(status) {
        case .directory:
            directoryCount += 1
        case .regular:
            fileCount += 1
            logicalBytes.rawValue += Int64(status.st_size)
        case .other:
            otherCount += 1
        }
    }
}
