import CStowageShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A counter every process that opens the same file sees at once: a 16-byte file, eight bytes of
/// magic then a native-endian `UInt64`, mapped `MAP_SHARED` and touched only with C11 atomics,
/// so reading it costs one load from memory and no system call. ``StoreGeneration`` and
/// ``StoreRemovals`` are such counters (the same mechanism as SQLite's `-shm` file).
///
/// Opening one whose file is missing, damaged (another length, another magic, not a regular
/// file, a link) or that the owner says must be replaced (a retired generation) installs a fresh
/// file, written aside and renamed in place, so handles that mapped the old file keep seeing it.
///
/// A process that truncates the file while another has it mapped makes the other's next read
/// fault (`SIGBUS`), as with any shared mapping; Stowage never truncates it.
package final class SharedCounterFile: @unchecked Sendable {
    // @unchecked: the only state is a shared mapping, touched only with C11 atomics.

    static let fileSize = 16
    static let counterOffset = 8

    /// The file.
    package let path: String
    private let mapping: UnsafeMutableRawPointer
    private let counter: UnsafeMutablePointer<UInt64>

    /// Opens the counter at `path`, installing a fresh one (counter 0) when it is missing,
    /// damaged, or holds a value `isReplaced` says is to be replaced.
    ///
    /// Call with the store's open lock held: two processes installing a file at once would each
    /// map their own.
    ///
    /// - Parameters:
    ///   - magic: The eight bytes the file starts with.
    ///   - what: The file, for errors ("the store's generation file").
    /// - Throws: ``StowageError`` when the file cannot be created or mapped (e.g. a directory
    ///   stands at its path).
    package init(path: String, magic: [UInt8], isReplaced: (UInt64) -> Bool, what: String) throws {
        precondition(magic.count == Self.counterOffset, "a shared counter's magic is eight bytes")
        self.path = path
        let descriptor =
            try Self.openSound(path, magic: magic, isReplaced: isReplaced, what: what)
            ?? Self.install(path, magic: magic, what: what)
        defer { close(descriptor) }
        guard let mapped = mmap(nil, Self.fileSize, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
            mapped != MAP_FAILED
        else { throw StowageError.syscall(.current, "map \(what)", path: path) }
        mapping = mapped
        counter = mapped.advanced(by: Self.counterOffset).assumingMemoryBound(to: UInt64.self)
    }

    deinit {
        munmap(mapping, Self.fileSize)
    }

    /// The counter: one load from shared memory.
    @inline(__always)
    package var value: UInt64 { stowage_atomic_load_u64(counter) }

    /// Adds `amount`; returns the value before.
    @discardableResult
    package func add(_ amount: UInt64) -> UInt64 {
        stowage_atomic_fetch_add_u64(counter, amount)
    }

    /// Sets `bits` in the counter.
    package func setBits(_ bits: UInt64) {
        _ = stowage_atomic_fetch_or_u64(counter, bits)
    }

    /// The file at `path` opened for reading and writing when it is a sound counter file; `nil`
    /// when it must be replaced (missing, a link, not a regular file, damaged, `isReplaced`).
    private static func openSound(
        _ path: String,
        magic: [UInt8],
        isReplaced: (UInt64) -> Bool,
        what: String
    ) throws -> Int32? {
        let descriptor = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT, ELOOP, ENXIO, EISDIR: return nil  // missing, a link, a socket; a directory fails install
            default: throw StowageError.syscall(.current, "open \(what)", path: path)
            }
        }
        var status = stat()
        var header = [UInt8](repeating: 0, count: fileSize)
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size == off_t(fileSize),
            pread(descriptor, &header, fileSize, 0) == fileSize, Array(header[0..<magic.count]) == magic,
            !isReplaced(header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: counterOffset, as: UInt64.self) })
        else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Writes a fresh counter file beside `path` and renames it in place; returns it open.
    private static func install(_ path: String, magic: [UInt8], what: String) throws -> Int32 {
        // Readable: the caller maps the file. Whatever was there (a link, a FIFO) is damage the
        // rename replaces; nothing is followed.
        let file = try TemporaryFile(beside: path, permissions: 0o600, readable: true)
        try file.write(magic + [UInt8](repeating: 0, count: fileSize - magic.count), action: "write \(what)")
        return try file.commitKeepingOpen(
            to: path,
            durability: .none,
            replacing: .anyFile,
            action: "install \(what)"
        )
    }
}
