import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Container {
    /// Opens `location`'s directory, confined to a rooted container's root.
    ///
    /// In a rooted container the location's components (`Library`, `Caches`) are opened one at
    /// a time with `O_NOFOLLOW`. A component that is a symbolic link is followed only when the
    /// directory it leads to — read back from the open descriptor, so a link swapped in between
    /// cannot fool the check — is inside the root. A link leading outside is refused: clearing,
    /// cleaning or purging `Library/Caches` must never empty a directory elsewhere because
    /// `Library` or `Caches` was replaced by a link.
    ///
    /// A platform container's directories come from the XDG variables (or FileManager), the
    /// user's own configuration, so links in them are followed as the user set them up.
    ///
    /// - Parameters:
    ///   - location: The location to open.
    ///   - creating: Create missing directories (`0700`) instead of returning `nil`.
    /// - Returns: An open directory descriptor the caller must close, or `nil` when the
    ///   directory does not exist and `creating` is false.
    /// - Throws: ``StowageError``: `.pathEscapesRoot` for a link that leads outside the root,
    ///   `.notADirectory` for a file in the way, system-call errors otherwise.
    package func openLocationDirectory(_ location: Location, creating: Bool) throws -> Int32? {
        let url = url(for: location)
        guard let root else {
            let path = url.fileSystemPath
            try PathInput.check(path, subject: "the \(location) directory")
            if creating { try DirectoryCreation.createDirectory(at: url) }
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else {
                if errno == ENOENT && !creating { return nil }
                throw StowageError.syscall(.current, "open the \(location) directory", path: path)
            }
            return descriptor
        }
        let rootPath = root.fileSystemPath
        try PathInput.check(rootPath, subject: "the container root")
        if creating { try DirectoryCreation.createDirectory(at: root) }
        var descriptor = open(rootPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT && !creating { return nil }
            throw StowageError.syscall(.current, "open the container root", path: rootPath)
        }
        let realRoot = Self.realPath(of: descriptor) ?? rootPath
        var path = rootPath
        for component in Self.rootedComponents(of: location) {
            path += "/" + component
            var next = openat(descriptor, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT && creating {
                if mkdirat(descriptor, component, 0o700) != 0 && errno != EEXIST {
                    let error = Errno.current
                    close(descriptor)
                    throw StowageError.syscall(error, "create directory", path: path)
                }
                next = openat(descriptor, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            if next < 0 && (errno == ELOOP || (errno == ENOTDIR && Self.isSymbolicLink(component, in: descriptor))) {
                // A symbolic link: open what it leads to, then judge the directory actually opened.
                next = openat(descriptor, component, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if next >= 0 {
                    let target = Self.realPath(of: next)
                    guard let target, target == realRoot || target.hasPrefix(realRoot + "/") else {
                        close(next)
                        close(descriptor)
                        throw StowageError(
                            code: .pathEscapesRoot,
                            message: "'\(path)' is a symbolic link to '\(target ?? "an unknown place")', outside the "
                                + "container root '\(rootPath)'; Stowage does not follow a location out of its "
                                + "container — replace the link with a directory (or a link inside the root)",
                            path: path
                        )
                    }
                }
            }
            let error = Errno.current
            close(descriptor)
            guard next >= 0 else {
                if error.rawValue == ENOENT && !creating { return nil }
                if error.rawValue == ENOTDIR {
                    throw StowageError(
                        code: .notADirectory,
                        message: "cannot use '\(path)' as a directory: something else is there; move it away",
                        path: path
                    )
                }
                throw StowageError.syscall(error, "open the \(location) directory", path: path)
            }
            descriptor = next
        }
        return descriptor
    }

    /// The file system and mount of `location`'s directory (``FileSystemBoundary``), which no
    /// removal in it leaves; `nil` when the directory does not exist or cannot be examined.
    ///
    /// - Throws: What ``openLocationDirectory(_:creating:)`` throws.
    package func fileSystemBoundary(of location: Location) throws -> FileSystemBoundary? {
        guard let descriptor = try openLocationDirectory(location, creating: false) else { return nil }
        defer { close(descriptor) }
        return FileSystemBoundary(descriptor: descriptor)
    }

    private static func isSymbolicLink(_ name: String, in directory: Int32) -> Bool {
        var status = stat()
        return fstatat(directory, name, &status, AT_SYMLINK_NOFOLLOW) == 0 && status.st_mode & S_IFMT == S_IFLNK
    }

    /// The components of `location`'s directory below a rooted container's root.
    static func rootedComponents(of location: Location) -> [String] {
        switch location {
        case .documents: ["Documents"]
        case .applicationSupport: ["Library", "Application Support"]
        case .caches: ["Library", "Caches"]
        case .preferences: ["Library", "Preferences"]
        case .temporary: ["tmp"]
        }
    }

    /// Where the directory open at `descriptor` really is, links resolved; `nil` where the
    /// system cannot tell.
    package static func realPath(of descriptor: Int32) -> String? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #elseif canImport(Darwin)
        var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN))
        guard fcntl(descriptor, F_GETPATH, &buffer) == 0 else { return nil }
        return String(cString: buffer)
        #else
        return nil
        #endif
    }
}
