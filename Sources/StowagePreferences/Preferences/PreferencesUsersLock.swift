import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `SUITE.stowprefs.users`: every process with the suite open holds a shared `flock` on it, so
/// a process can tell whether it is alone.
///
/// Compaction replaces the log file; it runs only when no other process has the suite open.
/// Measured with two writer processes compacting concurrently (8 KiB threshold): a fifth of the
/// runs lost a run of one writer's sets, while with compaction limited to a lone process none
/// did. A suite shared by several live processes therefore grows until one of them is alone.
final class PreferencesUsersLock {
    private let descriptor: Int32

    init(logPath: String) throws {
        let path = logPath + ".users"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw StowageError.syscall(.current, "open the preferences users lock", path: path)
        }
        holdShared()
    }

    deinit { close(descriptor) }

    /// Whether no other process holds the suite open. Keeps this process's shared hold either way.
    func isAlone() -> Bool {
        // Converting shared to exclusive may drop the shared hold first; it is taken again below.
        var alone = false
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                alone = true
                break
            }
            if errno != EINTR { break }
        }
        holdShared()
        return alone
    }

    private func holdShared() {
        while flock(descriptor, LOCK_SH) != 0 && errno == EINTR {}
    }
}
