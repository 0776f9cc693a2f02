import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Owner-only directories and files, refused when anyone else can read them.
enum SecureFiles {
    /// Creates `url` (and parents) `0700`, and requires the final directory to be this user's
    /// and closed to others.
    static func createDirectory(_ url: URL) throws {
        try DirectoryCreation.createDirectory(at: url)
        var status = stat()
        guard lstat(url.path, &status) == 0 else { throw StowageError.syscall(.current, "examine", path: url.path) }
        try requirePrivate(status, path: url.path, fix: "chmod 700")
    }

    /// The largest secret file read: items and keys are small; anything larger is not one.
    static let maximumFileSize = 16 << 20

    /// The file's bytes, or nil when it does not exist; refuses a file others can read.
    ///
    /// Opened without following a symbolic link and without blocking (a FIFO in a key file's
    /// or an item's place would otherwise wait for a writer forever), then checked on the
    /// descriptor to be a regular file.
    static func read(_ url: URL) throws -> [UInt8]? {
        let path = url.path(percentEncoded: false)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                throw StowageError(
                    code: .invalidArgument,
                    message: "\(path) is a symbolic link; secret files are never read through links — replace it "
                        + "with the file itself",
                    path: path
                )
            }
            throw StowageError.syscall(.current, "open", path: path)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw StowageError.syscall(.current, "examine", path: path) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw StowageError(
                code: .invalidArgument,
                message: "\(path) is not a regular file (mode \(String(status.st_mode & S_IFMT, radix: 8))): a FIFO, "
                    + "device, socket or directory is in a secret file's place; move it away",
                path: path
            )
        }
        guard status.st_size <= maximumFileSize else {
            throw StowageError(
                code: .corrupt,
                message: "\(path) is \(status.st_size) bytes, more than any secret file holds; it is not one",
                path: path
            )
        }
        try requirePrivate(status, path: path, fix: "chmod 600")
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        let filled = try bytes.withUnsafeMutableBytes {
            try FileDescriptorIO.read(into: $0, from: descriptor, action: "read", path: path)
        }
        return Array(bytes[0..<filled])
    }

    private static func requirePrivate(_ status: stat, path: String, fix: String) throws {
        guard status.st_uid == geteuid() else {
            throw StowageError(
                code: .permissionDenied,
                message: "\(path) belongs to user \(status.st_uid), not to this user; secrets must be the user's own",
                path: path
            )
        }
        guard status.st_mode & 0o077 == 0 else {
            throw StowageError(
                code: .permissionDenied,
                message: """
                    \(path) is readable or writable by others (mode \(String(status.st_mode & 0o777, radix: 8))); \
                    run `\(fix) '\(path)'` and try again
                    """,
                path: path
            )
        }
    }
}
