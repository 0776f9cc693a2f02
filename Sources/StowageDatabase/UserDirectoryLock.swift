import Foundation
import StowageCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An advisory `flock(2)` on `USER/.lock`: shared while a store has the user's database open,
/// exclusive while the user is being removed.
///
/// `flock` locks belong to the open file description, so two ``UserDatabases`` in one process
/// conflict exactly as two processes do: a removal is refused while anyone has the user open,
/// and an open is refused while a removal runs. The lock file goes with the directory.
final class UserDirectoryLock: Sendable {
    private let file: Mutex<LockFile?>

    private init(file: LockFile) { self.file = Mutex(file) }

    /// Takes the lock in `directory` (which must exist), waiting up to `patience` on `clock`
    /// while a conflicting lock is held (trying again every 10 ms on it).
    ///
    /// A little patience matters for removals: a child process between `fork` and `exec` holds
    /// a copy of every descriptor of its parent (close-on-exec closes them only at `exec`), so a
    /// shared lock this process has just released can outlive its `close` by that moment.
    ///
    /// - Throws: `StowageError` `.busy` when a conflicting lock is still held after `patience`.
    static func acquire(
        in directory: URL,
        exclusive: Bool,
        user: String,
        patience: Duration = .zero,
        clock: ElapsedClock = .continuous
    ) throws -> UserDirectoryLock {
        let path = directory.appending(path: ".lock").path
        let deadline = clock.now + patience
        var replacements = 0
        while true {
            let file = try LockFile(path: path)
            guard try file.tryLock(exclusive ? .exclusive : .shared) else {
                if clock.now < deadline {
                    clock.sleepBlocking(for: .milliseconds(10))
                    continue
                }
                throw StowageError(
                    code: .busy,
                    message: exclusive
                        ? "the database of user \(user.debugDescription) is open in this or another process; "
                            + "close it there (UserDatabases.close) and retry"
                        : "the database of user \(user.debugDescription) is being removed; retry when it is gone",
                    path: path
                )
            }
            // A removal renames the directory away after taking its exclusive lock; an open that
            // raced it may then hold a lock on the orphan. Such a lock is worthless: check that
            // the file locked is still the file at the path, and retry (recreating the directory)
            // if not.
            if file.isStillAtPath { return UserDirectoryLock(file: file) }
            replacements += 1
            if exclusive || replacements == 8 { break }
            try DirectoryCreation.createDirectory(at: directory)
        }
        throw StowageError(
            code: .busy,
            message: "the directory of user \(user.debugDescription) was replaced while locking it; retry",
            path: path
        )
    }

    /// Runs `body` holding an exclusive lock on `directory/.open`, waiting for it.
    ///
    /// Two first opens of one file race twice, whatever the busy timeout: switching a new file
    /// to WAL mode fails with "database is locked" while another connection is doing the same
    /// (SQLite does not call the busy handler there), and GRDB's migrator reads which migrations
    /// are applied before applying the others, so two connections would both create the same
    /// tables. Opening and migrating one at a time, across processes, removes both races.
    static func whileOpening<T>(in directory: URL, _ body: () throws -> T) throws -> T {
        let path = directory.appending(path: ".open").path
        let file = try LockFile(path: path)
        try file.lock(.exclusive)
        return try body()
    }

    /// Releases the lock; later calls do nothing.
    func release() {
        // Closing the file releases the lock.
        _ = file.withLock { $0.take() }
    }
}
