#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole reads and writes on a file descriptor: the loops every file format here needs, with
/// short transfers continued and `EINTR` retried, in one place.
package enum FileDescriptorIO {
    /// Writes all of `bytes` at `offset` (`pwrite`), or at the current position when `offset`
    /// is nil (`write`).
    ///
    /// - Parameter action: What the write is for, as errors name it (`"write cache file"`).
    /// - Throws: ``StowageError`` naming `path` (`.noSpace` on a full volume).
    package static func writeAll(
        _ bytes: UnsafeRawBufferPointer,
        to descriptor: Int32,
        at offset: Int? = nil,
        action: String,
        path: String
    ) throws {
        var done = 0
        while done < bytes.count {
            let pointer = bytes.baseAddress! + done
            let count =
                if let offset {
                    pwrite(descriptor, pointer, bytes.count - done, off_t(offset + done))
                } else {
                    write(descriptor, pointer, bytes.count - done)
                }
            if count < 0 {
                if errno == EINTR { continue }
                throw StowageError.syscall(.current, action, path: path)
            }
            done += count
        }
    }

    /// Reads into `buffer` until it is full or the file ends, at `offset` (`pread`) or at the
    /// current position when `offset` is nil (`read`); returns the number of bytes read.
    ///
    /// - Parameter action: What the read is for, as errors name it (`"read cache file"`).
    /// - Throws: ``StowageError`` naming `path`.
    package static func read(
        into buffer: UnsafeMutableRawBufferPointer,
        from descriptor: Int32,
        at offset: Int? = nil,
        action: String,
        path: String
    ) throws -> Int {
        var done = 0
        while done < buffer.count {
            let pointer = buffer.baseAddress! + done
            let count =
                if let offset {
                    pread(descriptor, pointer, buffer.count - done, off_t(offset + done))
                } else {
                    systemRead(descriptor, pointer, buffer.count - done)
                }
            if count < 0 {
                if errno == EINTR { continue }
                throw StowageError.syscall(.current, action, path: path)
            }
            if count == 0 { break }
            done += count
        }
        return done
    }
}

/// `read(2)`, named so that ``FileDescriptorIO/read(into:from:at:action:path:)`` does not shadow it.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

extension FileDescriptorIO {
    /// Closes `descriptor` (`close(2)`); its error, which leaves the descriptor closed all the
    /// same on Linux and Apple platforms, is ignored.
    package static func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }
}

/// `close(2)`, named so that ``FileDescriptorIO/close(_:)`` does not shadow it.
private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
