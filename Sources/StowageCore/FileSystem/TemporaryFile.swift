import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file written under a temporary name and moved over its destination whole with `rename(2)`,
/// so that readers see the old contents or the new, never a mix: the one temporary-write-
/// flush-rename sequence of every Stowage store (small files, disk cache values, the
/// preferences log's compaction, a store's generation file).
///
/// ```swift
/// let file = try TemporaryFile(beside: path)
/// try file.write(bytes)
/// try file.commit(to: path, durability: .synchronized)
/// ```
///
/// The temporary is created with `O_EXCL | O_NOFOLLOW` (never through a link an attacker left
/// in its place) on the destination's volume, so the rename is atomic. Until a commit
/// succeeds the value owns it: a failed write, flush or rename, and dropping the value without
/// committing, close and remove it, so no failure path leaves a temporary behind.
package struct TemporaryFile: ~Copyable {
    /// How far a commit goes to make the contents survive a crash.
    package enum Durability: Sendable {
        /// No flush: the rename is atomic against a process crash, but a power loss may leave
        /// the new name with missing data on file systems that do not order the two.
        case none
        /// Flushes the file to stable storage before the rename
        /// (``FileDescriptorIO/synchronize(_:dataOnly:action:path:)``), and its directory after
        /// it (and the directory above, when the commit created the file's directory): the new
        /// name is a change to the directory, which POSIX leaves in memory until that directory
        /// is flushed (fsync(2): "an explicit fsync() on a file descriptor for the directory is
        /// also needed"), as SQLite's journal and LevelDB's manifest do.
        case synchronized
    }

    /// What a commit may replace at the destination.
    package enum Replacement: Sendable {
        /// Only a regular file (or nothing): a symbolic link, a directory, a FIFO, a socket or
        /// a device at the destination is refused with `.invalidArgument`, and left in place.
        case regularFile
        /// Whatever is there except a directory, without looking first (one system call less):
        /// for a store's own files, where a link in a file's place is damage to overwrite.
        case anyFile
    }

    /// The temporary file's path.
    package let path: String
    /// The temporary file, open for writing (and reading with `readable`).
    package let descriptor: Int32
    /// The directory the file was made in through its descriptor, and its name there; `nil`
    /// and the path for a file made by path.
    private let directory: OpenDirectory?
    private let name: String
    /// Set once the file has its final name; then neither close nor removal is left to `deinit`.
    private var isCommitted = false
    /// Set when a commit handed the descriptor to the caller.
    private var isDescriptorTaken = false

    /// Creates a temporary file beside `destination` (`destination.tmp-PID-RANDOM`), so the
    /// rename that installs it stays on one volume; a leftover from a killed process keeps that
    /// prefix for whoever cleans up.
    ///
    /// - Parameters:
    ///   - destination: The path the file will be committed to.
    ///   - permissions: The new file's mode (before the umask).
    ///   - readable: Open for reading too (`O_RDWR`), for callers that map the file.
    /// - Throws: ``StowageError`` naming the temporary path.
    package init(beside destination: String, permissions: mode_t = 0o600, readable: Bool = false) throws {
        try Self.checkNoNUL(destination)
        try self.init(
            path: Self.temporaryPrefix(beside: destination) + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
            permissions: permissions,
            readable: readable,
            action: "create"
        )
    }

    /// Creates a temporary file in `directory` (`PID-RANDOM.tmp`), for stores that keep
    /// unfinished files apart from finished ones (the disk cache's `tmp/`); `directory` must be
    /// on the destination's volume.
    ///
    /// - Parameter action: What the file is for, as errors name it (`"create cache file"`).
    /// - Throws: ``StowageError`` naming the temporary path.
    package init(in directory: String, permissions: mode_t = 0o600, action: String = "create") throws {
        try Self.checkNoNUL(directory)
        try self.init(
            path: directory + "/\(getpid())-\(UInt64.random(in: 0...UInt64.max)).tmp",
            permissions: permissions,
            readable: false,
            action: action
        )
    }

    /// The start of the names of the temporaries ``init(beside:permissions:readable:)`` makes
    /// for `destination`: `destination.tmp-`, with the destination's name shortened (on a
    /// character boundary) when a temporary's name would pass `NAME_MAX` (255 bytes), so that
    /// a destination whose name is as long as a name may be can still be written. Whoever
    /// removes leftovers matches on it.
    package static func temporaryPrefix(beside destination: String) -> String {
        let slash = destination.utf8.lastIndex(of: UInt8(ascii: "/"))
        let directory = slash.map { String(destination[...$0]) } ?? ""
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        // ".tmp-" + a PID (at most 10 digits) + "-" + a UInt32 (at most 10 digits).
        let room = 255 - 26
        guard name.utf8.count > room else { return destination + ".tmp-" }
        var shortened = ""
        for character in name {
            guard shortened.utf8.count + character.utf8.count <= room else { break }
            shortened.append(character)
        }
        return directory + shortened + ".tmp-"
    }

    /// Refuses a path with a NUL byte: the system call would see the path end there and act on
    /// another file than the one named (``PathInput``).
    private static func checkNoNUL(_ path: String) throws {
        guard let offset = path.utf8.firstIndex(of: 0).map({ path.utf8.distance(from: path.utf8.startIndex, to: $0) })
        else { return }
        throw StowageError.invalidArgument(
            "cannot write \(PathInput.quoted(path, limit: 1_024)): the path contains a NUL byte at byte \(offset), "
                + "where a system call would end it; fix the path where it was made",
            path: path
        )
    }

    private init(path: String, permissions: mode_t, readable: Bool, action: String) throws {
        let flags = (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW
        let descriptor = systemOpen(path, flags, permissions)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, action, path: path) }
        self.path = path
        self.descriptor = descriptor
        directory = nil
        name = path
    }

    /// Creates a temporary file (`PID-RANDOM.tmp`) in the open `directory`: where the directory
    /// is reached through its descriptor, a symbolic link put in its place later cannot move the
    /// file elsewhere. Commit it with ``commit(into:name:durability:action:)``.
    ///
    /// - Parameter action: What the file is for, as errors name it (`"create cache file"`).
    /// - Throws: ``StowageError`` naming the temporary path.
    package init(
        in directory: OpenDirectory,
        permissions: mode_t = 0o600,
        readable: Bool = false,
        action: String = "create"
    ) throws {
        let name = "\(getpid())-\(UInt64.random(in: 0...UInt64.max)).tmp"
        let descriptor = openat(
            directory.descriptor,
            name,
            (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
            permissions
        )
        guard descriptor >= 0 else { throw StowageError.syscall(.current, action, path: directory.pathOf(name)) }
        self.path = directory.pathOf(name)
        self.descriptor = descriptor
        self.directory = directory
        self.name = name
    }

    /// A file with no name in `directory`: created read-write and unlinked at once, so nothing
    /// is left behind even if the process dies. The caller owns (and closes) the descriptor.
    ///
    /// - Parameter action: What the file is for, as errors name it (`"create temporary file"`).
    /// - Throws: ``StowageError`` naming the path the file briefly had.
    package static func unnamed(in directory: String, action: String = "create") throws -> Int32 {
        var file = try TemporaryFile(
            path: directory + "/\(getpid())-\(UInt64.random(in: 0...UInt64.max)).tmp",
            permissions: 0o600,
            readable: true,
            action: action
        )
        file.isDescriptorTaken = true
        return file.descriptor  // dropping `file` unlinks the name
    }

    /// A file with no name in the open `directory`, as the path-taking `unnamed(in:action:)` makes.
    package static func unnamed(in directory: OpenDirectory, action: String = "create") throws -> Int32 {
        var file = try TemporaryFile(in: directory, readable: true, action: action)
        file.isDescriptorTaken = true
        return file.descriptor  // dropping `file` unlinks the name
    }

    deinit {
        if !isDescriptorTaken { close(descriptor) }
        if !isCommitted {
            if let directory { unlinkat(directory.descriptor, name, 0) } else { unlink(path) }
        }
    }

    /// Flushes as `durability` asks, closes the file and renames it to `name` in the open
    /// `destination` directory, both ends reached through their descriptors: for a store that
    /// keeps its directories open so that a link put in their place cannot redirect its writes.
    /// Whatever stands at `name` except a directory is replaced (``Replacement/anyFile``).
    ///
    /// - Throws: ``StowageError``: `.invalidArgument` when a directory stands at `name`; the
    ///   system call's error otherwise. The temporary is removed and the destination left as it was.
    package consuming func commit(
        into destination: OpenDirectory,
        name destinationName: String,
        durability: Durability,
        action: String = "replace"
    ) throws {
        if durability == .synchronized { try synchronize() }
        isDescriptorTaken = true
        close(descriptor)
        let renamed = renameat(directory?.descriptor ?? AT_FDCWD, name, destination.descriptor, destinationName)
        guard renamed == 0 else { throw Self.renameError(destination.pathOf(destinationName), action: action) }
        isCommitted = true
        guard durability == .synchronized else { return }
        try FileDescriptorIO.synchronize(destination.descriptor, action: "flush directory", path: destination.path)
        Self.noteSynchronized(destination.path)
    }

    /// Appends `bytes` at the current position.
    ///
    /// - Parameter action: What the write is for, as errors name it (`"write cache file"`).
    /// - Throws: ``StowageError`` naming the temporary path (`.noSpace` on a full volume).
    package func write(_ bytes: UnsafeRawBufferPointer, action: String = "write") throws {
        try FileDescriptorIO.writeAll(bytes, to: descriptor, action: action, path: path)
    }

    /// Appends `bytes` at the current position.
    package func write(_ bytes: [UInt8], action: String = "write") throws {
        try bytes.withUnsafeBytes { try write($0, action: action) }
    }

    /// Flushes what was written to stable storage now, for callers that need it flushed
    /// before the commit (``Durability/synchronized`` does this inside the commit).
    package func synchronize(action: String = "flush") throws {
        try FileDescriptorIO.synchronize(descriptor, action: action, path: path)
    }

    /// Flushes the file as `durability` asks, closes it and renames it to `destination`.
    ///
    /// - Parameters:
    ///   - destination: The final path, on the temporary's volume.
    ///   - durability: Whether to flush before the rename.
    ///   - replacing: What may stand at `destination`; see ``Replacement``.
    ///   - createsParentDirectory: When the destination's directory is missing, create it
    ///     (`0700`, one level) and rename again: for stores that fan files out into
    ///     subdirectories made on first use.
    ///   - action: What the rename is for, as errors name it (`"move cache file to"`).
    /// - Throws: ``StowageError``: `.invalidArgument` naming `destination` when it is a
    ///   directory (or, with ``Replacement/regularFile``, a symbolic link); the system call's
    ///   error otherwise. The temporary is removed and the destination left as it was.
    package consuming func commit(
        to destination: String,
        durability: Durability,
        replacing: Replacement = .regularFile,
        createsParentDirectory: Bool = false,
        action: String = "replace"
    ) throws {
        try prepareCommit(to: destination, durability: durability, replacing: replacing)
        isDescriptorTaken = true
        close(descriptor)
        try install(
            at: destination,
            durability: durability,
            createsParentDirectory: createsParentDirectory,
            action: action
        )
    }

    /// As ``commit(to:durability:replacing:createsParentDirectory:action:)``, but leaves the
    /// file open and returns its descriptor, which the caller then owns: for a file that is
    /// used (mapped, locked) under its final name right away.
    package consuming func commitKeepingOpen(
        to destination: String,
        durability: Durability,
        replacing: Replacement = .regularFile,
        action: String = "replace"
    ) throws -> Int32 {
        try prepareCommit(to: destination, durability: durability, replacing: replacing)
        isDescriptorTaken = true
        do {
            try install(at: destination, durability: durability, createsParentDirectory: false, action: action)
        } catch {
            // Not installed: the temporary goes, and its descriptor with it. Installed but its
            // directory not flushed: the file stays, the caller gets the error, not the descriptor.
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Gives the file its final name only if nothing has it yet (`link(2)`, then the temporary
    /// name goes): for creating a file that another process may be creating at the same moment.
    ///
    /// - Returns: `true` when this file was installed, `false` when `destination` existed.
    /// - Throws: ``StowageError`` naming `destination`; the temporary is removed either way.
    ///
    /// With ``Durability/synchronized``, the file is flushed before the link and its directory
    /// after it, as ``commit(to:durability:replacing:createsParentDirectory:action:)`` does.
    package consuming func commitIfAbsent(
        to destination: String,
        durability: Durability = .none,
        action: String = "create"
    ) throws -> Bool {
        try Self.checkNoNUL(destination)
        if durability == .synchronized { try synchronize() }
        guard link(path, destination) == 0 else {
            if errno == EEXIST { return false }
            throw StowageError.syscall(.current, action, path: destination)
        }
        // Dropping `self` closes the file and removes the temporary name.
        if durability == .synchronized { try Self.synchronizeDirectory(Self.directory(of: destination)) }
        return true
    }

    private func prepareCommit(to destination: String, durability: Durability, replacing: Replacement) throws {
        try Self.checkNoNUL(destination)
        if durability == .synchronized { try synchronize() }
        guard replacing == .regularFile else { return }
        var status = stat()
        guard lstat(destination, &status) == 0 else {
            if errno == ENOENT { return }  // nothing to replace (or no directory, reported by the rename)
            throw StowageError.syscall(.current, "examine", path: destination)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK: throw Self.refusal(destination, "is a symbolic link")
        case S_IFDIR: throw Self.refusal(destination, "is a directory")
        // A FIFO, socket or device (a caller's `/dev/null`, run as root) is not replaced either.
        case S_IFIFO: throw Self.refusal(destination, "is a FIFO")
        case S_IFSOCK: throw Self.refusal(destination, "is a socket")
        default: throw Self.refusal(destination, "is a device")
        }
    }

    private mutating func install(
        at destination: String,
        durability: Durability,
        createsParentDirectory: Bool,
        action: String
    ) throws {
        let parent = Self.directory(of: destination)
        var createdParent = false
        if rename(path, destination) != 0 {
            guard createsParentDirectory, errno == ENOENT else { throw Self.renameError(destination, action: action) }
            if mkdir(parent, 0o700) == 0 {
                createdParent = true
            } else if errno != EEXIST {
                throw StowageError.syscall(.current, "create directory", path: parent)
            }
            guard rename(path, destination) == 0 else { throw Self.renameError(destination, action: action) }
        }
        isCommitted = true
        guard durability == .synchronized else { return }
        try Self.synchronizeDirectory(parent)
        if createdParent { try Self.synchronizeDirectory(Self.directory(of: parent)) }
    }

    /// The directory part of `path` (`.` for a bare name, `/` for a name at the root).
    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The directories commits flushed last (at most 256): for tests, which cannot see a flush
    /// otherwise.
    package static let synchronizedDirectories = Mutex<[String]>([])

    /// Flushes `directory`'s entries (a new or renamed name in it) to stable storage.
    ///
    /// - Throws: ``StowageError`` naming `directory`; the file is installed either way, but a
    ///   power loss may take its new name back.
    private static func synchronizeDirectory(_ directory: String) throws {
        let descriptor = systemOpen(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, "flush directory", path: directory) }
        defer { close(descriptor) }
        try FileDescriptorIO.synchronize(descriptor, action: "flush directory", path: directory)
        noteSynchronized(directory)
    }

    private static func noteSynchronized(_ directory: String) {
        synchronizedDirectories.withLock { recent in
            if recent.count == 256 { recent.removeFirst(128) }
            recent.append(directory)
        }
    }

    /// The rename's error; a directory in the destination's place gets the typed refusal.
    private static func renameError(_ destination: String, action: String) -> StowageError {
        if errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST {
            return refusal(destination, "is a directory")
        }
        return StowageError.syscall(.current, action, path: destination)
    }

    private static func refusal(_ destination: String, _ what: String) -> StowageError {
        StowageError.invalidArgument(
            "cannot replace \(PathInput.quoted(destination, limit: 1_024)): it \(what), not a regular file; "
                + "remove it first",
            path: destination
        )
    }
}

/// `open(2)` with a mode.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}
