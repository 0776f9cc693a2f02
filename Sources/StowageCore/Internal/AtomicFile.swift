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
            try writeAll(bytes, to: descriptor, path: temporary)
            guard fsync(descriptor) == 0 else { throw StowageError.syscall(.current, "flush", path: temporary) }
        }
        guard rename(temporary, path) == 0 else { throw StowageError.syscall(.current, "replace", path: path) }
        succeeded = true
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and `EINTR`.
    ///
    /// - Throws: ``StowageError`` naming `path` (`.noSpace` on a full volume).
    package static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw StowageError.syscall(.current, "write", path: path)
            }
            offset += written
        }
    }
}

/// `write(2)`, named so that it does not clash with ``AtomicFile/write(_:to:permissions:)``.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
