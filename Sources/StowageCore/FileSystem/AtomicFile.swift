import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes small files so that readers see either the old contents or the new, never a mix.
package enum AtomicFile {
    /// Writes `bytes` to a unique temporary file beside `url`, flushes it, and renames it over `url`.
    ///
    /// - Throws: ``StowageError`` naming the path; the temporary file is removed on failure.
    package static func write(_ bytes: [UInt8], to url: URL, permissions: mode_t = 0o600) throws {
        let path = url.fileSystemPath
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, permissions)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, "create", path: temporary) }
        var succeeded = false
        defer {
            if !succeeded { unlink(temporary) }
        }
        do {
            defer { close(descriptor) }
            try bytes.withUnsafeBytes {
                try FileDescriptorIO.writeAll($0, to: descriptor, action: "write", path: temporary)
            }
            try FileDescriptorIO.synchronize(descriptor, action: "flush", path: temporary)
        }
        guard rename(temporary, path) == 0 else { throw StowageError.syscall(.current, "replace", path: path) }
        succeeded = true
    }
}
