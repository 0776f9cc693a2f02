import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens the directory a clearing names and checks, on the open descriptor, that it may be
/// emptied.
///
/// A check on the path's text is not enough: `LINK/.` names the link's target through the link
/// (`O_NOFOLLOW` applies to the last component only, and that is `.`), and a bind mount or a
/// `/proc/self/root` reaches `/` under another name. So trailing `.` components are dropped
/// before the `O_NOFOLLOW` open, a final `..` is refused, and the opened directory's device and
/// inode are compared with those of `/` and of the home directory and its ancestors.
enum ClearingTarget {
    /// Opens `path` as a directory without following a final symbolic link.
    ///
    /// - Throws: ``StowageError``: `.invalidArgument` for a path with NUL or control bytes, a
    ///   final `..` or a final symbolic link (also when written `LINK/.`); `.notFound`,
    ///   `.notADirectory` and others from `open(2)`.
    static func openDirectory(_ path: String) throws -> Int32 {
        try PathInput.check(path, subject: "cannot clear")
        var components = path.split(separator: "/", omittingEmptySubsequences: true)
        while components.last == "." { components.removeLast() }
        if components.last == ".." {
            throw StowageError.invalidArgument(
                "cannot clear \(PathInput.quoted(path)): it ends in '..'; name the directory to empty directly",
                path: path
            )
        }
        let named =
            components.isEmpty
            ? (path.hasPrefix("/") ? "/" : ".")
            : (path.hasPrefix("/") ? "/" : "") + components.joined(separator: "/")
        let descriptor = open(named, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = Errno.current
            // Linux answers ENOTDIR (O_DIRECTORY wins) or ELOOP for a final link: look at what is there.
            var status = stat()
            if error.rawValue == ELOOP
                || (error.rawValue == ENOTDIR && lstat(named, &status) == 0
                    && status.st_mode & S_IFMT == S_IFLNK)
            {
                throw StowageError.invalidArgument(
                    "cannot clear \(PathInput.quoted(path)): '\(named)' is a symbolic link; pass the directory it "
                        + "points to if you mean it",
                    path: path
                )
            }
            throw StowageError.syscall(error, "clear", path: path)
        }
        return descriptor
    }

    /// Throws when the directory open at `descriptor` is `/`, the home directory or one of the
    /// home directory's ancestors.
    static func refuseProtected(_ descriptor: Int32, path: String) throws {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw StowageError.syscall(.current, "examine", path: path) }
        let identity = FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        for (protected, what) in protectedDirectories() where protected == identity {
            throw StowageError.invalidArgument(
                "refusing to clear \(PathInput.quoted(path)): it is \(what); name the directory to empty",
                path: path
            )
        }
    }

    /// `/`, then the home directory and each of its ancestors, by identity.
    private static func protectedDirectories() -> [(FileIdentity, String)] {
        var result: [(FileIdentity, String)] = []
        func add(_ path: String, _ what: String) {
            var status = stat()
            if stat(path, &status) == 0 {
                result.append((FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)), what))
            }
        }
        add("/", "the file system root '/'")
        let home = FileManager.default.homeDirectoryForCurrentUser.fileSystemPath
        var ancestor = home
        add(home, "your home directory '\(home)'")
        while let slash = ancestor.lastIndex(of: "/"), ancestor != "/" {
            ancestor = slash == ancestor.startIndex ? "/" : String(ancestor[..<slash])
            add(ancestor, "'\(ancestor)', which holds your home directory")
        }
        return result
    }
}
