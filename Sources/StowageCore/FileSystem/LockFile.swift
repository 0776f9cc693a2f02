#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An advisory `flock(2)` lock on a file: the one wrapper every store's inter-process lock uses.
///
/// `flock` locks belong to the open file description, so two `LockFile`s on one path conflict
/// within a process exactly as across processes, and a lock is released when its descriptor
/// closes, including when the process dies. Waits retry on `EINTR`.
package final class LockFile: Sendable {
    /// How the lock is held.
    package enum Mode: Sendable {
        /// Any number of holders at once, none exclusive.
        case shared
        /// One holder, no shared ones.
        case exclusive

        fileprivate var operation: Int32 { self == .shared ? LOCK_SH : LOCK_EX }
    }

    /// The open lock file (`O_RDWR`, close-on-exec).
    package let descriptor: Int32
    /// Its path, for messages.
    package let path: String

    /// Opens `path`, creating it `0600`, never through a symbolic link.
    ///
    /// - Throws: `StowageError` when the file cannot be opened or created; `.invalidArgument`
    ///   for a path with a NUL or control byte, which the system call would cut short.
    package init(path: String) throws {
        try PathInput.check(path, subject: "the lock file")
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, "open the lock file", path: path) }
        self.path = path
    }

    deinit { close(descriptor) }

    /// Waits for the lock in `mode` (converting a lock already held).
    ///
    /// - Throws: `StowageError` when `flock` fails for a reason other than an interruption.
    package func lock(_ mode: Mode) throws {
        try Self.lock(descriptor, mode, path: path)
    }

    /// Takes the lock in `mode` if no conflicting lock is held; `false` when one is.
    package func tryLock(_ mode: Mode) throws -> Bool {
        try Self.tryLock(descriptor, mode, path: path)
    }

    /// Releases the lock, keeping the file open.
    package func unlock() {
        Self.unlock(descriptor)
    }

    /// Whether the file locked is still the one at ``path``: `false` once it was removed or
    /// renamed over, which makes the lock worthless to anyone opening the path afresh.
    package var isStillAtPath: Bool {
        var held = stat()
        var current = stat()
        return fstat(descriptor, &held) == 0 && lstat(path, &current) == 0
            && held.st_ino == current.st_ino && held.st_dev == current.st_dev
    }

    /// Waits for a lock in `mode` on a descriptor someone else owns (a data file locked as a whole).
    package static func lock(_ descriptor: Int32, _ mode: Mode, path: String) throws {
        while flock(descriptor, mode.operation) != 0 {
            guard errno == EINTR else { throw StowageError.syscall(.current, "lock", path: path) }
        }
    }

    /// Takes a lock in `mode` on `descriptor` if no conflicting lock is held; `false` when one is.
    package static func tryLock(_ descriptor: Int32, _ mode: Mode, path: String) throws -> Bool {
        while flock(descriptor, mode.operation | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw StowageError.syscall(.current, "lock", path: path)
        }
        return true
    }

    /// Releases the lock on `descriptor`.
    package static func unlock(_ descriptor: Int32) {
        flock(descriptor, LOCK_UN)
    }
}
