import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `mkdir -p` that creates missing directories `0700` (as the XDG spec asks) and checks what
/// it finds.
package enum DirectoryCreation {
    /// Creates `url` and its missing parents.
    ///
    /// - Parameter privateToOwner: Also require an existing final directory to be owned by this
    ///   user and not reachable by others, as a directory in a shared `/tmp` must be.
    /// - Throws: ``StowageError``: `.notADirectory` when something else is in the way,
    ///   `.permissionDenied` when a private directory belongs to someone else.
    package static func createDirectory(at url: URL, privateToOwner: Bool = false) throws {
        let path = url.fileSystemPath
        var status = stat()
        if lstat(path, &status) != 0 {
            guard errno == ENOENT else { throw StowageError.syscall(.current, "examine", path: path) }
            let parent = url.deletingLastPathComponent()
            if parent.fileSystemPath != path { try createDirectory(at: parent) }
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw StowageError.syscall(.current, "create directory", path: path)
            }
            guard lstat(path, &status) == 0 else { throw StowageError.syscall(.current, "examine", path: path) }
        }
        guard FileType(status) == .directory else {
            throw StowageError(
                code: .notADirectory,
                message: "cannot use '\(path)' as a directory: something else (a file or a symbolic link) is there; "
                    + "move it away or choose another location",
                path: path
            )
        }
        if privateToOwner && (status.st_uid != geteuid() || status.st_mode & 0o077 != 0) {
            throw StowageError(
                code: .permissionDenied,
                message: "'\(path)' already exists but belongs to uid \(status.st_uid) or is open to other users "
                    + "(mode \(String(status.st_mode & 0o7777, radix: 8))); remove it, or set TMPDIR to a private directory",
                path: path
            )
        }
    }
}
