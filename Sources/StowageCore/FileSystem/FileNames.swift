#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Removing, renaming and examining files by path, for stores that manage their own names
/// (a leftover temporary, an orphaned value file, a damaged index moved aside). Best effort: a
/// failure is reported as `false` or `nil` with `errno` set, for callers to whom a file already
/// gone or a name already taken is the expected answer.
package enum FileNames {
    /// `unlink(2)`: removes the name `path` (never what a link at it points to).
    ///
    /// - Returns: Whether the name was removed; `false` (with `errno`) when it was not there or
    ///   could not be removed.
    @discardableResult
    package static func remove(_ path: String) -> Bool {
        unlink(path) == 0
    }

    /// `rmdir(2)`: removes the empty directory `path`.
    ///
    /// - Returns: Whether it was removed; `false` (with `errno`) when it was not there, not
    ///   empty, or could not be removed.
    @discardableResult
    package static func removeDirectory(_ path: String) -> Bool {
        rmdir(path) == 0
    }

    /// `rename(2)`: moves `source` to `destination`, replacing a file there.
    ///
    /// - Returns: Whether it moved; `false` with `errno` set otherwise.
    @discardableResult
    package static func rename(_ source: String, to destination: String) -> Bool {
        systemRename(source, destination) == 0
    }
}

extension FileStatus {
    /// Examines `path` without following a final symbolic link; `nil` with `errno` set on failure.
    package static func of(_ path: String) -> FileStatus? {
        at(AT_FDCWD, path)
    }
}

/// `rename(2)`, named so that ``FileNames/rename(_:to:)`` does not shadow it.
private func systemRename(_ source: String, _ destination: String) -> Int32 {
    rename(source, destination)
}
