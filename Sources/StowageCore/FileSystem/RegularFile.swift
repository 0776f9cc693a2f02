import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file a person or a program named — a manifest, an import — as a regular file, with
/// errors that say what was there instead.
///
/// `Data(contentsOf:)` blocks forever on a FIFO, reads a device until memory runs out, and
/// reports a directory as `NSCocoaErrorDomain` error 256 ("you don't have permission"). Here
/// the file is opened with `O_NONBLOCK` (so opening a FIFO returns at once), examined with
/// `fstat` on the open descriptor (so what is checked is what is read), refused unless it is a
/// regular file, and read up to a size limit.
package enum RegularFile {
    /// Reads all of the regular file at `path`.
    ///
    /// - Parameters:
    ///   - path: The path as given; checked by ``PathInput`` first. A symbolic link is followed
    ///     (the caller named the file) unless `followsLinks` is false.
    ///   - subject: What the file is, for messages: `"the clean manifest"`.
    ///   - maximumSize: The largest file accepted, 64 MiB by default.
    ///   - followsLinks: Whether a final symbolic link is followed.
    /// - Throws: ``StowageError``: `.invalidArgument` for a bad path, a directory, FIFO, device
    ///   or socket, a link when links are not followed, or a file over `maximumSize`;
    ///   `.notFound` and `.permissionDenied` from `open(2)`.
    package static func read(
        _ path: String,
        subject: String,
        maximumSize: Int = 64 << 20,
        followsLinks: Bool = true
    ) throws -> Data {
        try PathInput.check(path, subject: subject)
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followsLinks ? 0 : O_NOFOLLOW)
        let descriptor = open(path, flags)
        guard descriptor >= 0 else {
            let error = Errno.current
            if error.rawValue == ELOOP && !followsLinks {
                throw StowageError.invalidArgument(
                    "\(subject) \(PathInput.quoted(path)) is a symbolic link, which is not followed here; "
                        + "give the file it points to",
                    path: path
                )
            }
            throw StowageError.syscall(error, "read \(subject)", path: path)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw StowageError.syscall(.current, "examine \(subject)", path: path)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw StowageError.invalidArgument(
                "\(subject) \(PathInput.quoted(path)) is \(kind(status.st_mode)), not a regular file; "
                    + "give the path of a file",
                path: path
            )
        }
        guard status.st_size <= maximumSize else {
            throw StowageError.invalidArgument(
                "\(subject) \(PathInput.quoted(path)) is \(status.st_size) bytes, over the limit of "
                    + "\(maximumSize) bytes; is it the right file?",
                path: path
            )
        }
        // A regular file ignores O_NONBLOCK. Read one byte past the size it had, so a file that
        // grew meanwhile is still caught by the limit.
        var data = Data(count: Int(status.st_size) + 1)
        let count = try data.withUnsafeMutableBytes {
            try FileDescriptorIO.read(into: $0, from: descriptor, action: "read \(subject)", path: path)
        }
        guard count <= Int(status.st_size) || count <= maximumSize else {
            throw StowageError.invalidArgument(
                "\(subject) \(PathInput.quoted(path)) grew past the limit of \(maximumSize) bytes while it was read",
                path: path
            )
        }
        data.count = count
        return data
    }

    /// "a directory", "a FIFO (named pipe)", … for a message.
    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }
}
