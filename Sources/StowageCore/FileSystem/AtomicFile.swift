import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes small files so that readers see either the old contents or the new, never a mix.
package enum AtomicFile {
    /// Writes `bytes` to a unique temporary file beside `url`, flushes it, and renames it over `url`
    /// (a ``TemporaryFile`` committed with ``TemporaryFile/Durability/synchronized``).
    ///
    /// - Throws: ``StowageError`` naming the path (`.invalidArgument` when `url` is a symbolic
    ///   link or a directory); the temporary file is removed on failure.
    package static func write(_ bytes: [UInt8], to url: URL, permissions: mode_t = 0o600) throws {
        let path = url.fileSystemPath
        let file = try TemporaryFile(beside: path, permissions: permissions)
        try file.write(bytes)
        try file.commit(to: path, durability: .synchronized)
    }
}
