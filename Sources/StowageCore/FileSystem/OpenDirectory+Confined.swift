import CStowageShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Work below an open directory that a symbolic link planted inside it cannot lead out of: a
// store's own subdirectories are opened with O_NOFOLLOW, files below them with openat2's
// RESOLVE_NO_SYMLINKS (Linux) or O_NOFOLLOW_ANY (Apple), so a link in a subdirectory's place
// turns a write, a removal or a read into an error or a miss, never an act on a file elsewhere.

extension OpenDirectory {
    /// The child directory `name`, opened without following a symbolic link.
    ///
    /// - Parameter creating: Make it (`0700`) when it is missing; and when a symbolic link, a
    ///   file or anything else that is not a directory stands in its place, remove that first
    ///   (for a store's own subdirectories, where such a thing is damage).
    /// - Returns: `nil` when it is missing (or not a directory) and `creating` is `false`.
    /// - Throws: `StowageError` naming the child when it can be neither opened nor made.
    package func childDirectory(_ name: String, creating: Bool) throws -> OpenDirectory? {
        try openChildDirectory(name, creating: creating).0
    }

    /// The child directory `name`, as `childDirectory(name, creating: true)` gives it.
    ///
    /// - Returns: The directory, and whether it was missing at the first look: its name is then
    ///   new in this directory (made here, or by another writer a moment before), and a caller
    ///   that flushes must flush this directory for it.
    /// - Throws: `StowageError` naming the child when it can be neither opened nor made.
    package func openOrMakeChildDirectory(_ name: String) throws -> (directory: OpenDirectory, wasMissing: Bool) {
        let (directory, wasMissing) = try openChildDirectory(name, creating: true)
        // With `creating`, a child is returned or an error thrown.
        return (directory!, wasMissing)
    }

    /// One open when the child is there; one failed open, a `mkdirat` and an open when it is
    /// missing and `creating` asks for it.
    private func openChildDirectory(_ name: String, creating: Bool) throws -> (OpenDirectory?, wasMissing: Bool) {
        if let child = openChild(name) { return (child, false) }
        let error = errno
        guard error == ENOENT || error == ELOOP || error == ENOTDIR else {
            throw StowageError.syscall(Errno(rawValue: error), "open directory", path: pathOf(name))
        }
        guard creating else { return (nil, true) }
        if error != ENOENT, unlinkat(descriptor, name, 0) != 0, errno != ENOENT {
            throw StowageError.syscall(.current, "remove what stands in a directory's place", path: pathOf(name))
        }
        if mkdirat(descriptor, name, 0o700) != 0, errno != EEXIST {
            throw StowageError.syscall(.current, "create directory", path: pathOf(name))
        }
        guard let child = openChild(name) else {
            throw StowageError.syscall(.current, "open directory", path: pathOf(name))
        }
        return (child, true)
    }

    /// Removes the entry `name`: a file, or an empty directory standing in a file's place (a
    /// store's own names are files, so a directory there is damage that would otherwise stay for
    /// good); a symbolic link is removed as a link, and a directory with anything in it stays.
    ///
    /// - Returns: Whether it was there and went.
    @discardableResult
    package func removeEntry(_ name: String) -> Bool {
        if unlinkat(descriptor, name, 0) == 0 { return true }
        // unlink(2) of a directory: EISDIR on Linux, EPERM on Apple's systems (POSIX allows both).
        guard errno == EISDIR || errno == EPERM else { return false }
        return unlinkat(descriptor, name, AT_REMOVEDIR) == 0
    }

    /// Opens `relativePath` (names joined by `/`: no `..` or `.`, no leading or trailing `/`,
    /// no empty name, no NUL byte) below this directory without following a symbolic link
    /// anywhere on the way.
    ///
    /// The path is checked in place, byte by byte: a value read costs no allocation here, and
    /// only the fallback walk (no `openat2`) splits it into names.
    ///
    /// - Returns: The descriptor, or -1 with `errno` (`ELOOP` or `ENOTDIR` where a link stands
    ///   in the path, `ENOENT`, `EINVAL` for a path refused above).
    package func openBeneath(_ relativePath: String, flags: Int32) -> Int32 {
        let byteCount = relativePath.utf8.count
        let opened = relativePath.withCString { path -> Int32 in
            guard Self.isNamesBelow(path, byteCount: byteCount) else {
                errno = EINVAL
                return -1
            }
            return stowage_open_beneath(descriptor, path, flags | O_NOFOLLOW)
        }
        // EAGAIN: the kernel saw a race it will not resolve; the walk below has no such case.
        guard opened < 0, errno == ENOSYS || errno == EPERM || errno == EAGAIN else { return opened }
        // No openat2 (a kernel before 5.6, or a seccomp filter that refuses it): one component
        // at a time, each with O_NOFOLLOW. The path passed the check, so every name is sound.
        let components = relativePath.split(separator: "/")
        var current = self
        for component in components.dropLast() {
            guard let child = current.openChild(String(component)) else { return -1 }
            current = child
        }
        return openat(current.descriptor, String(components.last ?? ""), flags | O_NOFOLLOW)
    }

    /// Whether the `byteCount` bytes at `path` are one or more names joined by single `/`s:
    /// not empty, no leading or trailing `/`, no `//`, no `.` or `..` name, and no NUL byte
    /// (a system call would end the path there and open another file than the one named).
    static func isNamesBelow(_ path: UnsafePointer<CChar>, byteCount: Int) -> Bool {
        let slash = CChar(UInt8(ascii: "/"))
        let dot = CChar(UInt8(ascii: "."))
        var nameStart = 0
        for index in 0...byteCount {
            let byte = index == byteCount ? slash : path[index]
            if byte == 0 { return false }
            guard byte == slash else { continue }
            let length = index - nameStart
            guard length > 0 else { return false }
            if path[nameStart] == dot && (length == 1 || (length == 2 && path[nameStart + 1] == dot)) { return false }
            nameStart = index + 1
        }
        return true
    }
}
