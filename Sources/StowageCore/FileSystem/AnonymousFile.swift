#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file with no name, in a chosen directory, readable and writable by this process alone: a
/// scratch copy that must not outlive the process however it ends (`kill -9` included), nor be
/// seen in the directory's listing, usage or clears. Linux's `O_TMPFILE`; elsewhere, or on a file
/// system without it, a unique name unlinked at once (`mkstemp(3)` then `unlink(2)`).
package final class AnonymousFile: Sendable {
    /// The open descriptor; closed with the object.
    package let descriptor: Int32
    /// The directory it was made in, as errors name it.
    package let directory: String

    /// Makes the file in `directory`.
    ///
    /// - Throws: ``StowageError`` when `directory` cannot hold one (missing, read-only, full).
    package init(in directory: String) throws {
        self.directory = directory
        #if os(Linux)
        // O_TMPFILE is (__O_TMPFILE | O_DIRECTORY); Glibc's macro is not imported into Swift.
        let temporaryFile: Int32 = 0o20_000_000 | O_DIRECTORY
        let anonymous = open(directory, temporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        if anonymous >= 0 {
            descriptor = anonymous
            return
        }
        #endif
        var template = Array((directory + "/.anonymous-XXXXXX").utf8CString)
        let named = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard named >= 0 else { throw StowageError.syscall(.current, "make an anonymous file", path: directory) }
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        _ = fcntl(named, F_SETFD, FD_CLOEXEC)
        descriptor = named
    }

    deinit {
        FileDescriptorIO.close(descriptor)
    }

    /// Writes all of `bytes` at `offset`.
    ///
    /// - Throws: ``StowageError`` (`.noSpace` on a full volume).
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        try FileDescriptorIO.writeAll(
            bytes,
            to: descriptor,
            at: offset,
            action: "write an anonymous file",
            path: directory
        )
    }

    /// Reads into `buffer` from `offset` until it is full or the file ends; returns the bytes read.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        try FileDescriptorIO.read(
            into: buffer,
            from: descriptor,
            at: offset,
            action: "read an anonymous file",
            path: directory
        )
    }

    /// Cuts the file to nothing, giving its blocks back to the volume.
    package func removeAllBytes() {
        _ = ftruncate(descriptor, 0)
    }
}
