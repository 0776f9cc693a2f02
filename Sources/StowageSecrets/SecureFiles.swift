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

    /// The file's bytes, or nil when it does not exist; refuses a file others can read.
    static func read(_ url: URL) throws -> [UInt8]? {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw StowageError.syscall(.current, "open", path: url.path)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw StowageError.syscall(.current, "examine", path: url.path) }
        try requirePrivate(status, path: url.path, fix: "chmod 600")
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        let filled = try bytes.withUnsafeMutableBytes {
            try FileDescriptorIO.read(into: $0, from: descriptor, action: "read", path: url.path)
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
