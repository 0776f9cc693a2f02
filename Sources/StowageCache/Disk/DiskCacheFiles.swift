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
struct DiskCacheFiles: Sendable {
    let dataDirectory: String
    let temporaryDirectory: String
    let synchronous: Bool

    init(root: String, synchronous: Bool) throws {
        dataDirectory = root + "/data"
        temporaryDirectory = root + "/tmp"
        self.synchronous = synchronous
        for directory in [dataDirectory, temporaryDirectory] {
            try DirectoryCreation.createDirectory(at: URL(filePath: directory, directoryHint: .isDirectory))
        }
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
        try TemporaryFile(in: temporaryDirectory, action: "create cache file")
    }

    /// Flushes the complete file when the cache writes synchronously and renames it to `name`
    /// under `data/`, creating the hash's subdirectory on first use. Whatever stands at the
    /// name (a link or FIFO put there is damage) is replaced without a look first.
    func moveIntoPlace(_ file: consuming TemporaryFile, as name: String) throws {
        try file.commit(
            to: path(of: name),
            durability: synchronous ? .synchronized : .none,
            replacing: .anyFile,
            createsParentDirectory: true,
            action: "move cache file to"
        )
    }

    /// Opens the value file `name` for reading: never through a symbolic link, never blocking
    /// on a FIFO, and only when it is a regular file of `expectedSize` bytes.
    ///
    /// - Returns: The open descriptor, or `nil` when the file is gone, or is a link, a FIFO, a
    ///   device, a directory or of another length — damage the caller treats as a miss.
    func openValue(_ name: String, expectedSize: Int64) throws -> Int32? {
        let path = path(of: name)
        // O_NONBLOCK: opening a FIFO put in a value's place would otherwise wait for a writer.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ELOOP || errno == ENXIO { return nil }
            throw StowageError.syscall(.current, "open cache file", path: path)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = Errno.current
            FileDescriptorIO.close(descriptor)
            throw StowageError.syscall(error, "examine", path: path)
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

    /// Unlinks files whose index rows are gone; a file already gone is fine.
    func remove(_ names: [String]) {
        for name in names { FileNames.remove(path(of: name)) }
    }
}
