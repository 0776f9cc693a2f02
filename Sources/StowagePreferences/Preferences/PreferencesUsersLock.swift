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
    private let file: LockFile

    init(logPath: String) throws {
        file = try LockFile(path: logPath + ".users")
        try file.lock(.shared)
    }

    /// Whether no other process holds the suite open. Keeps this process's shared hold either way.
    func isAlone() -> Bool {
        // Converting shared to exclusive may drop the shared hold first; it is taken again below.
        // A failing `flock` (only ENOLCK) counts as company: compaction waits.
        let alone = (try? file.tryLock(.exclusive)) ?? false
        try? file.lock(.shared)
        return alone
    }
}
