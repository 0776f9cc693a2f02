#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file system and mount a walk was given: the one place that decides whether an entry is
/// on "the same file system", which no removal leaves and no staying measure crosses.
///
/// This is `rm --one-file-system` and `du -x` (GNU coreutils' `fts` with `FTS_XDEV`), which
/// compare `st_dev`, plus the mount itself: a bind mount of another directory of the same device
/// has the same `st_dev`, so on Linux the mount ID (`statx`'s `STATX_MNT_ID`, 5.8+) tells it
/// apart too. Where the system reports no mount ID (Apple platforms, older kernels) the device
/// alone decides.
///
/// Walks ask it of every directory they open, through the descriptor they opened, never by
/// path: a mount that appears at a name after the directory was opened does not redirect the
/// walk (the descriptor still names the directory underneath), and removing the mount point then
/// fails with `EBUSY`, which ``isOutside(_:in:)`` recognises.
package struct FileSystemBoundary: Sendable, Hashable {
    /// `st_dev` of the directory the walk was given.
    package var device: UInt64
    /// Its mount's ID, `nil` where the system reports none.
    package var mountID: UInt64?

    /// What reports say of a mount point, or an entry under one, that a walk left in place.
    package static let skipMessage = "skipped: another file system"

    /// The boundary of what `status` describes.
    package init(_ status: FileStatus) {
        device = status.identity.device
        mountID = status.mountID
    }

    /// The boundary of the file or directory open at `descriptor`; `nil` with `errno` when it
    /// cannot be examined.
    package init?(descriptor: Int32) {
        guard let status = FileStatus.of(descriptor) else { return nil }
        self.init(status)
    }

    /// Whether `status` describes an entry on this file system and mount.
    package func contains(_ status: FileStatus) -> Bool {
        guard status.identity.device == device else { return false }
        guard let mountID, let other = status.mountID else { return true }
        return mountID == other
    }

    /// Whether the file or directory open at `descriptor` is on this file system and mount; one
    /// that cannot be examined is not (a walk skips what it cannot place).
    package func contains(descriptor: Int32) -> Bool {
        FileStatus.of(descriptor).map(contains) ?? false
    }

    /// Whether `name` in the directory open at `parent` is a mount point of another file
    /// system or mount (or cannot be examined), for a removal that failed with `EBUSY`:
    /// Linux refuses to unlink or remove a mount point. `errno` is kept.
    package func isOutside(_ name: UnsafePointer<CChar>, in parent: Int32) -> Bool {
        let saved = errno
        defer { errno = saved }
        guard let status = FileStatus.at(parent, name) else { return false }
        return !contains(status)
    }

    /// Whether the directory at `path` (symbolic links on the way followed, as the path-based
    /// calls that come next follow them) is on this file system and mount: `false` for a mount
    /// point of another, or a directory reached through a link to one. `true` when there is no
    /// directory there to judge (missing, unreadable): the caller's own call then reports that.
    /// `errno` is kept.
    package func holdsDirectory(atPath path: String) -> Bool {
        let saved = errno
        defer { errno = saved }
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return true }
        defer { close(descriptor) }
        return contains(descriptor: descriptor)
    }

    /// Whether `name` in the directory at `parentPath` is a mount point: on another file system
    /// or mount than that directory (`false` when either cannot be examined). For a rename that
    /// failed with `EBUSY` (Linux refuses to move a mount point): the caller leaves it in place
    /// and names it. `errno` is kept.
    package static func isMountPoint(_ name: String, in parentPath: String) -> Bool {
        let saved = errno
        defer { errno = saved }
        let parent = open(parentPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return false }
        defer { close(parent) }
        guard let boundary = FileSystemBoundary(descriptor: parent), let status = FileStatus.at(parent, name) else {
            return false
        }
        return !boundary.contains(status)
    }
}
