#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

extension FileDescriptorIO {
    /// Flushes what was written through `descriptor` to stable storage, so that it survives a
    /// power loss: the one way every Stowage store that promises power-loss durability flushes.
    ///
    /// - Apple platforms: `fcntl(descriptor, F_FULLFSYNC)`. Apple's `fsync(2)` only moves the data
    ///   to the drive, which may keep it in a volatile cache and write it out of order; `F_FULLFSYNC`
    ///   asks the drive to flush that cache too. File systems that do not implement it (some
    ///   network and FAT volumes) answer `ENOTSUP` or `EINVAL`; then this falls back to `fsync`,
    ///   the best such a volume offers — the same fallback SQLite's `fullfsync` uses.
    /// - Linux: `fsync(2)`, or `fdatasync(2)` when `dataOnly` is `true`; both wait for the
    ///   device's cache to be flushed (a `REQ_PREFLUSH`/FUA write) on file systems mounted with
    ///   barriers, the default.
    ///
    /// - Parameters:
    ///   - descriptor: A descriptor open for writing.
    ///   - dataOnly: Skip metadata that reading the data back does not need (timestamps):
    ///     `fdatasync` on Linux. Apple platforms flush everything either way.
    ///   - action: What the flush is for, as errors name it (`"flush cache file"`).
    ///   - path: The file's path, for errors.
    /// - Throws: ``StowageError`` naming `path` with the failing call's `errno` (`EIO` means the
    ///   data may not be on the device).
    package static func synchronize(
        _ descriptor: Int32,
        dataOnly: Bool = false,
        action: String,
        path: String
    ) throws {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return }
        guard errno == ENOTSUP || errno == EINVAL || errno == EOPNOTSUPP else {
            throw StowageError.syscall(.current, action, path: path)
        }
        let result = fsync(descriptor)
        #else
        let result = dataOnly ? fdatasync(descriptor) : fsync(descriptor)
        #endif
        guard result == 0 else { throw StowageError.syscall(.current, action, path: path) }
    }
}
