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
///
/// The directories being read wait on a stack of this walk's own, not on the thread's, as
/// ``TreeRemoval``'s do: each is listed in full when it is opened (``ListedNames``), so a tree
/// thousands of levels deep costs one descriptor per level and never overflows a thread's stack.
/// Where descriptors run out (`EMFILE`), the directory that could not be opened is an issue and
/// the walk goes on, as `du` warns and goes on.
struct TreeWalker {
    private let rootPath: String
    private let options: DiskUsage.Options
    private let cancellation: CancellationFlag?
    private var rootDevice: UInt64 = 0
    /// The measured directory's file system and mount, with ``DiskUsage/Options/staysOnFileSystem``.
    private var rootBoundary: FileSystemBoundary?
    /// Files with more than one link seen so far, so each is counted once (like `du`).
    private var seenLinks = Set<FileIdentity>()
    private var issues: [DiskUsage.Issue] = []
    /// The directories from the measured one down to the one being read.
    private var levels: [Level] = []
    private var children: [DiskUsage.Child] = []

    /// A directory being read: its names, the next one to examine, and the totals so far of
    /// the directory and what was read below it.
    private struct Level {
        /// Its name in its parent, for issue paths and the per-child breakdown; unused at the top.
        var name: String
        var descriptor: Int32
        var names = ListedNames()
        var next = 0
        var totals: DiskUsage.Totals
    }

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
        if FileType(status) == .directory {
            let descriptor = open(rootPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if descriptor < 0 {
                report(rootPath, "cannot read directory", .current)
            } else {
                defer { levels.forEach { close($0.descriptor) } }  // when cancelled
                if options.staysOnFileSystem { rootBoundary = FileSystemBoundary(descriptor: descriptor) }
                try push("", descriptor, totals: totals)
                totals = try walk()
            }
        }
        return DiskUsage(path: rootPath, totals: totals, children: children, issues: issues)
    }

    /// Reads the directories on ``levels`` to the end, deepest first, and returns the totals of
    /// the measured one.
    private mutating func walk() throws -> DiskUsage.Totals {
        while let top = levels.indices.last {
            let level = levels[top]
            if level.next < level.names.count {
                levels[top].next += 1
                try level.names.withName(at: level.next) { try add($0, in: level.descriptor) }
                continue
            }
            close(level.descriptor)
            levels.removeLast()
            guard let parent = levels.indices.last else { return level.totals }
            finished(level.name, isDirectory: true, level.totals, parent: parent)
        }
        return DiskUsage.Totals()
    }

    /// Pushes the directory open at `descriptor` with its names; with none, and an issue, when
    /// it cannot be listed.
    private mutating func push(_ name: String, _ descriptor: Int32, totals: DiskUsage.Totals) throws {
        levels.append(Level(name: name, descriptor: descriptor, totals: totals))
        let path = currentPath
        do {
            try cancellation?.check()
            try ListedNames.read(descriptor, path: path, into: &levels[levels.count - 1].names)
        } catch let error as StowageError {
            report(path, "cannot read directory", (error.cause as? Errno) ?? .current)
        }
    }

    /// Adds the entry `name` of the directory open at `descriptor` (the top of ``levels``), or
    /// pushes it when it is a directory to read.
    private mutating func add(_ name: UnsafePointer<CChar>, in descriptor: Int32) throws {
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

        var totals = DiskUsage.Totals()
        totals.count(status)
        if type == .directory {
            let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            // A bind mount of the same device has the root's st_dev: its mount ID tells (one
            // fstat per directory, none per file).
            if child >= 0, let rootBoundary, !rootBoundary.contains(descriptor: child) {
                close(child)
                return
            }
            if child >= 0 {
                try push(String(cString: name), child, totals: totals)
                return
            }
            if errno != ENOENT { report(path(of: name), "cannot read directory", .current) }
        }
        let isChild = levels.count == 1 && options.includesChildren
        finished(isChild ? String(cString: name) : "", isDirectory: type == .directory, totals)
    }

    /// Adds the totals of an entry of the directory at `levels[parent]`, the top one unless given.
    private mutating func finished(
        _ name: String,
        isDirectory: Bool,
        _ totals: DiskUsage.Totals,
        parent: Int? = nil
    ) {
        let parent = parent ?? levels.count - 1
        levels[parent].totals.add(totals)
        if parent == 0 && options.includesChildren {
            children.append(DiskUsage.Child(name: name, isDirectory: isDirectory, totals: totals))
        }
    }

    private func isExcluded(_ name: UnsafePointer<CChar>) -> Bool {
        for pattern in options.excluding where pattern.matches(name) { return true }
        return false
    }

    /// The path of the directory at the top of ``levels``.
    private var currentPath: String {
        levels.count <= 1 ? rootPath : joined(rootPath, levels.dropFirst().map(\.name).joined(separator: "/"))
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
