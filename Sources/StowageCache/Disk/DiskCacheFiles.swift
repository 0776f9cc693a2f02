import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of a disk cache: `data/` holds values, `tmp/` holds values being written.
///
/// A value is written to `tmp/PID-RANDOM.tmp` (a ``TemporaryFile``), closed (and flushed when
/// asked), then renamed into `data/`; only after that does the index point at it. So a file in `data/` is always
/// complete, and a crash leaves at worst an orphan that ``DiskCache`` collects on open.
/// POSIX calls throughout: Foundation's `Data.write(options: .atomic)` costs about 10× more
/// per small file on Linux (see the `disk-cache` benchmarks).
///
/// `data/`, `tmp/` and the hash subdirectories are reached through descriptors opened without
/// following symbolic links, and value files are opened with no link allowed on the way
/// (``OpenDirectory/openBeneath(_:flags:)``): a link planted in a subdirectory's place makes
/// a read a miss and a write replace the link with a real directory, never act on files
/// outside the cache's directory.
struct DiskCacheFiles: Sendable {
    let dataDirectory: String
    let temporaryDirectory: String
    let synchronous: Bool
    /// `data/`, open.
    let data: OpenDirectory
    /// `tmp/`, open.
    let temporary: OpenDirectory

    init(root: String, synchronous: Bool) throws {
        dataDirectory = root + "/data"
        temporaryDirectory = root + "/tmp"
        self.synchronous = synchronous
        try DirectoryCreation.createDirectory(at: URL(filePath: root, directoryHint: .isDirectory))
        // The cache's directory bounds every removal below it, as `rm --one-file-system`: a
        // mount inside it (at `data/`, `tmp/` or a hash subdirectory) is another file system's,
        // and its files are never collected as orphans, evicted or cleared (FileSystemBoundary).
        let rootDirectory = try OpenDirectory.open(path: root, staysOnFileSystem: true)
        // A link or file in `data`'s or `tmp`'s place is damage: replaced by a real directory.
        data = try rootDirectory.childDirectory("data", creating: true)!
        temporary = try rootDirectory.childDirectory("tmp", creating: true)!
    }

    func path(of name: String) -> String { dataDirectory + "/" + name }

    /// Writes `data` to a new file and moves it to `name` under `data/`.
    func write(_ data: Data, as name: String) throws {
        let file = try makeTemporaryFile()
        try data.withUnsafeBytes { try file.write($0, action: "write cache file") }
        try moveIntoPlace(file, as: name)
    }

    /// A new file under `tmp/` for a value being written; removed unless moved into place.
    func makeTemporaryFile() throws -> TemporaryFile {
        try TemporaryFile(in: temporary, action: "create cache file")
    }

    /// Flushes the complete file when the cache writes synchronously and renames it to `name`
    /// (`HH/…`) under `data/`, creating the hash's subdirectory on first use (and replacing
    /// whatever is not a directory in its place). Whatever stands at the name (a link or FIFO put
    /// there is damage) is replaced without a look first.
    func moveIntoPlace(_ file: consuming TemporaryFile, as name: String) throws {
        let (subdirectoryName, fileName) = Self.split(name)
        let (subdirectory, created) = try data.openOrMakeChildDirectory(subdirectoryName)
        try file.commit(
            into: subdirectory,
            name: fileName,
            durability: synchronous ? .synchronized : .none,
            action: "move cache file to"
        )
        if synchronous && created {
            // The new subdirectory is a new name in `data/`.
            try FileDescriptorIO.synchronize(data.descriptor, action: "flush directory", path: dataDirectory)
        }
    }

    /// Whether `name` has the form of a value file's name (`HH/…`, ``DiskCacheFileName``): a
    /// subdirectory of `data/` and a file in it, each one name, neither `.` nor `..`, with no
    /// NUL byte. The index holds names, and a row garbled or written by hand may hold `../…` or
    /// an absolute path: such a name is damage, neither opened nor removed. (`openBeneath`
    /// refuses it, but `unlinkat` resolves `..`, which `O_NOFOLLOW` does not stop: a removal of
    /// the row's file unlinked outside the cache's directory.)
    static func isValueName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else { return false }
        return isOneName(bytes[..<slash]) && isOneName(bytes[bytes.index(after: slash)...])
    }

    private static func isOneName(_ bytes: Substring.UTF8View) -> Bool {
        !bytes.isEmpty && !bytes.elementsEqual(".".utf8) && !bytes.elementsEqual("..".utf8)
            && !bytes.contains { $0 == UInt8(ascii: "/") || $0 == 0 }
    }

    /// Whether the value file `name` is simply gone (removed by another process after the
    /// index read); `false` for a name that is not a value file's (``isValueName(_:)``), which
    /// is damage, and is never looked up outside `data/`.
    func isGone(_ name: String) -> Bool {
        Self.isValueName(name) && FileStatus.at(AT_FDCWD, path(of: name)) == nil
    }

    /// `HH/rest` as its two parts.
    private static func split(_ name: String) -> (subdirectory: String, file: String) {
        guard let slash = name.firstIndex(of: "/") else { return ("", name) }
        return (String(name[..<slash]), String(name[name.index(after: slash)...]))
    }

    /// Opens the value file `name` for reading: never through a symbolic link (anywhere on the
    /// way from `data/`), never blocking on a FIFO, and only when it is a regular file of
    /// `expectedSize` bytes.
    ///
    /// - Returns: The open descriptor, or `nil` when the file is gone, or is a link, a FIFO, a
    ///   device, a directory or of another length, or a link stands in its subdirectory's
    ///   place — damage the caller treats as a miss.
    func openValue(_ name: String, expectedSize: Int64) throws -> Int32? {
        guard Self.isValueName(name) else { return nil }
        // O_NONBLOCK: opening a FIFO put in a value's place would otherwise wait for a writer.
        let descriptor = data.openBeneath(name, flags: O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ELOOP || errno == ENXIO || errno == ENOTDIR || errno == EXDEV {
                return nil
            }
            throw StowageError.syscall(.current, "open cache file", path: path(of: name))
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = Errno.current
            FileDescriptorIO.close(descriptor)
            throw StowageError.syscall(error, "examine", path: path(of: name))
        }
        guard status.st_mode & S_IFMT == S_IFREG, Int64(status.st_size) == expectedSize, expectedSize >= 0 else {
            FileDescriptorIO.close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Reads the file `name`, or `nil` when it is gone, not a regular file, or does not have
    /// `expectedSize` bytes (a value that does not read back whole is never returned).
    func read(_ name: String, expectedSize: Int64) throws -> Data? {
        let path = path(of: name)
        guard let descriptor = try openValue(name, expectedSize: expectedSize) else { return nil }
        defer { FileDescriptorIO.close(descriptor) }
        let count = Int(expectedSize)
        guard count > 0 else { return Data() }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        let received: Int
        do {
            received = try FileDescriptorIO.read(
                into: UnsafeMutableRawBufferPointer(start: buffer, count: count),
                from: descriptor,
                action: "read cache file",
                path: path
            )
        } catch {
            buffer.deallocate()
            throw error
        }
        guard received == count else {
            buffer.deallocate()
            return nil
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .custom { pointer, _ in pointer.deallocate() })
    }

    /// Removes everything in `data/` through the descriptor opened when the cache was opened,
    /// never by path: a link put in the cache directory's place, or in `data`'s, since then
    /// cannot lead the removal to another directory's files.
    ///
    /// - Returns: The entries that could not be removed.
    /// - Throws: `StowageError` when `data/` cannot be read.
    func removeAllValues() throws -> [ClearReport.Failure] {
        var removal = TreeRemoval(cancellation: nil)
        try removal.removeContents(of: data)
        return removal.failures
    }

    /// The mount points in the cache's directory (`data/`, `tmp/`, or a hash subdirectory of
    /// another file system or mount), whose files no removal of the cache touches: `removeAll()`
    /// names them, whether their rows were dropped at open (orphan collection) or are being
    /// removed now. One listing of `data/` and an `fstat` per subdirectory.
    func mountPoints() -> [String] {
        var found: [String] = []
        if !temporary.isInsideBoundary { found.append(temporaryDirectory) }
        guard data.isInsideBoundary else { return found + [dataDirectory] }
        for name in (try? data.entries().map(\.name)) ?? [] {
            if let subdirectory = try? data.childDirectory(name, creating: false), !subdirectory.isInsideBoundary {
                found.append(subdirectory.path)
            }
        }
        return found
    }

    /// Unlinks files whose index rows are gone; a file already gone is fine, and so is a
    /// subdirectory that is gone or is not a directory (nothing of the cache's is there).
    ///
    /// - Returns: The mount points whose files were left in place (`data/`, a hash
    ///   subdirectory, or a value file, of another file system or mount: FileSystemBoundary),
    ///   each once.
    @discardableResult
    func remove(_ names: [String]) -> [String] {
        guard !names.isEmpty else { return [] }
        // A mounted `data/` keeps every file: named once, as the mount point it is.
        guard data.isInsideBoundary else { return [dataDirectory] }
        var skipped: [String] = []
        var opened: (name: String, directory: OpenDirectory?)? = nil
        // A name that is not a value file's (`../…`, an absolute path) names nothing of the cache's.
        for name in names where Self.isValueName(name) {
            let (subdirectoryName, fileName) = Self.split(name)
            if opened?.name != subdirectoryName {
                // A subdirectory that is a mount point keeps its files (FileSystemBoundary).
                let subdirectory = try? data.childDirectory(subdirectoryName, creating: false)
                if let subdirectory, !subdirectory.isInsideBoundary, !skipped.contains(subdirectory.path) {
                    skipped.append(subdirectory.path)
                }
                opened = (subdirectoryName, subdirectory.flatMap { $0.isInsideBoundary ? $0 : nil })
            }
            guard let directory = opened?.directory, !directory.removeEntry(fileName), errno == EBUSY else { continue }
            // A file bind-mounted over the value file (Linux refuses to unlink a mount point):
            // another file system's, kept and named.
            let isMounted = fileName.withCString { name in
                directory.boundary.map { $0.isOutside(name, in: directory.descriptor) } ?? false
            }
            if isMounted { skipped.append(directory.pathOf(fileName)) }
        }
        return skipped
    }
}
