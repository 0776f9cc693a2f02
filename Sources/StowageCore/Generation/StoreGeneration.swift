import CStowageShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The generation of one store: a counter that every handle of the store, in every process,
/// reads before it serves anything it remembers.
///
/// Clearing a store advances it; removing the store (a user wipe, a cleaner deleting its
/// directory) retires it. A handle that sees a generation other than the one it last saw drops
/// what it holds in memory (a ``GenerationWatch`` does the bookkeeping); a handle that sees its
/// store retired serves nothing more from it.
///
/// The counter lives in a 16-byte file in the store's directory, ``fileName``: the magic
/// `STWGEN01`, then the generation as a native-endian `UInt64` whose top bit (``retiredBit``)
/// marks retirement. The file is mapped `MAP_SHARED`, so an advance in one process is visible
/// to every other at once and a check costs one load from memory — no system call on the read
/// path. (The same mechanism as the preferences log's shared header and SQLite's `-shm` file.)
///
/// Retirement belongs to the file, not to the path: opening a store whose generation file is
/// retired, damaged or missing installs a fresh one (written aside and renamed in place), so a
/// store re-created at the same path starts a new life while handles of the removed one keep
/// seeing their file retired.
///
/// A process that truncates the file while another has it mapped makes the other's next check
/// fault (`SIGBUS`), as with any shared mapping; Stowage never truncates it.
package final class StoreGeneration: @unchecked Sendable {
    // @unchecked: the only state is a shared mapping, touched only with C11 atomics.

    /// The name of the generation file in a store's directory.
    package static let fileName = ".stowage-generation"
    /// Set in a retired store's generation.
    package static let retiredBit: UInt64 = 1 << 63
    static let magic = Array("STWGEN01".utf8)
    static let fileSize = 16
    static let counterOffset = 8

    /// The generation file.
    package let path: String
    private let mapping: UnsafeMutableRawPointer
    private let counter: UnsafeMutablePointer<UInt64>

    /// Opens the generation file in `directory`, installing a fresh one when it is missing,
    /// damaged or retired.
    ///
    /// Call with the store's open lock held: two processes installing a file at once would each
    /// map their own.
    ///
    /// - Throws: ``StowageError`` when the file cannot be created or mapped (e.g. a directory
    ///   stands at its path).
    package init(directory: String) throws {
        path = directory + "/" + Self.fileName
        let descriptor = try Self.openSound(path) ?? Self.install(path)
        defer { close(descriptor) }
        guard let mapped = mmap(nil, Self.fileSize, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
            mapped != MAP_FAILED
        else { throw StowageError.syscall(.current, "map the store's generation file", path: path) }
        mapping = mapped
        counter = mapped.advanced(by: Self.counterOffset).assumingMemoryBound(to: UInt64.self)
    }

    deinit {
        munmap(mapping, Self.fileSize)
    }

    /// The current generation, retired bit included: one load from shared memory.
    @inline(__always)
    package var value: UInt64 { stowage_atomic_load_u64(counter) }

    /// Whether the store was removed.
    package var isRetired: Bool { Self.isRetired(value) }

    /// Whether `generation` is the generation of a removed store.
    @inline(__always)
    package static func isRetired(_ generation: UInt64) -> Bool { generation & retiredBit != 0 }

    /// Tells every handle that the store was cleared: what they remember is from before.
    package func advance() {
        _ = stowage_atomic_fetch_add_u64(counter, 1)
    }

    /// Tells every handle that the store is gone.
    package func retire() {
        _ = stowage_atomic_fetch_or_u64(counter, Self.retiredBit)
    }

    // MARK: - Opening

    /// The file at `path` opened for reading and writing when it is a live generation file;
    /// `nil` when it must be replaced (missing, a link, not a regular file, damaged, retired).
    private static func openSound(_ path: String) throws -> Int32? {
        let descriptor = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT, ELOOP, ENXIO, EISDIR: return nil  // missing, a link, a socket; a directory fails install
            default: throw StowageError.syscall(.current, "open the store's generation file", path: path)
            }
        }
        var status = stat()
        var header = [UInt8](repeating: 0, count: fileSize)
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size == off_t(fileSize),
            pread(descriptor, &header, fileSize, 0) == fileSize, Array(header[0..<magic.count]) == magic,
            !isRetired(header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: counterOffset, as: UInt64.self) })
        else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Writes a fresh generation file beside `path` and renames it in place; returns it open.
    private static func install(_ path: String) throws -> Int32 {
        // Readable: the caller maps the file. Whatever was there (a link, a FIFO) is damage the
        // rename replaces; nothing is followed.
        let file = try TemporaryFile(beside: path, permissions: 0o600, readable: true)
        try file.write(
            magic + [UInt8](repeating: 0, count: fileSize - magic.count),
            action: "write the store's generation file"
        )
        return try file.commitKeepingOpen(
            to: path,
            durability: .none,
            replacing: .anyFile,
            action: "install the store's generation file"
        )
    }
}
