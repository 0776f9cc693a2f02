import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An advisory `flock` on `DIR/lock` that tells an opening process whether it is alone.
///
/// Every process holds the lock shared while the cache is open. Opening first tries to take it
/// exclusively: when that succeeds, no other process is using the cache, so files written but
/// never indexed (a crash mid-write) can be removed at once and a damaged index rebuilt. When
/// another process holds it, only leftovers older than a grace period are touched, because a
/// young one may be another process's write in flight.
final class DiskCacheProcessLock: Sendable {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, "open lock file", path: path) }
    }

    deinit { close(descriptor) }

    /// Takes the lock exclusively if no other process holds it; returns whether it did.
    func acquireExclusiveIfAlone() throws -> Bool {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw StowageError.syscall(.current, "lock", path: "lock")
        }
        return true
    }

    /// Waits for the lock exclusively: used on `DIR/open.lock` so that processes open the
    /// index one at a time (SQLite's journal-mode switch at open does not wait for a busy lock).
    func acquireExclusive() {
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
    }

    /// Releases the lock.
    func release() {
        flock(descriptor, LOCK_UN)
    }

    /// Holds the lock shared (from exclusive or from nothing) for as long as the cache is open.
    func holdShared() {
        while flock(descriptor, LOCK_SH) != 0 && errno == EINTR {}
    }
}
