import Dispatch
import GRDBSQLite
import Synchronization

/// Copies the index's write-ahead log back into the database file on a background thread, so
/// writers do not wait for it.
///
/// SQLite checkpoints on the committing connection by default (every 1,000 WAL pages): the
/// writer that crosses the mark copies the pages and waits for two `fdatasync`s, about 5 µs on
/// every 1 KiB set averaged out (`disk-cache.set-1KiB`). Here the writer's connection only
/// checkpoints past ``fallbackPages`` (a bound on the WAL should this thread fall behind), and
/// the commit queue calls ``commitFinished()`` after each commit: every
/// ``commitsPerCheckpoint`` commits a `PASSIVE` checkpoint runs on a connection of this thread's
/// own, beside the writers (a passive checkpoint takes no lock a writer needs). Durability is
/// unchanged: a commit is in the WAL, and synced as the durability says, before it returns.
final class DiskCacheCheckpointer: Sendable {
    /// WAL pages past which the writer's own connection checkpoints anyway.
    static let fallbackPages = 8_000
    /// Commits between background checkpoints (a 1 KiB set writes about 5 pages).
    static let commitsPerCheckpoint = 200

    private struct State {
        var commits = 0
        var isRunning = false
        var isClosed = false
    }

    private let path: String
    private let synchronous: Bool
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "org.stowage.disk-cache.checkpoint")
    /// Opened on the first checkpoint, used only on `queue`.
    private let connection = Mutex<OpaquePointer?>(nil)

    init(path: String, synchronous: Bool) {
        self.path = path
        self.synchronous = synchronous
    }

    /// Frees a connection `close()` did not (a cache released without closing).
    deinit {
        connection.withLock { connection in
            if let connection { sqlite3_close_v2(connection) }
        }
    }

    /// Counts a commit; every ``commitsPerCheckpoint`` starts a background checkpoint unless
    /// one is running.
    func commitFinished() {
        let starts = state.withLock { state in
            state.commits += 1
            guard state.commits >= Self.commitsPerCheckpoint, !state.isRunning, !state.isClosed else { return false }
            state.commits = 0
            state.isRunning = true
            return true
        }
        guard starts else { return }
        queue.async { [self] in
            checkpoint()
            state.withLock { $0.isRunning = false }
        }
    }

    /// Waits for a running checkpoint, starts no more, and closes the connection.
    func close() {
        state.withLock { $0.isClosed = true }
        queue.sync {
            connection.withLock { connection in
                if let open = connection { sqlite3_close_v2(open) }
                connection = nil
            }
        }
    }

    /// One passive checkpoint; failures are left to the next one (and to the writer's fallback).
    private func checkpoint() {
        connection.withLock { connection in
            if connection == nil { connection = Self.open(path: path, synchronous: synchronous) }
            guard let connection else { return }
            sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        }
    }

    private static func open(path: String, synchronous: Bool) -> OpaquePointer? {
        var connection: OpaquePointer?
        // NOFOLLOW: an index swapped for a symlink since the cache opened it is not followed out.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        guard sqlite3_open_v2(path, &connection, flags, nil) == SQLITE_OK,
            let connection
        else {
            sqlite3_close_v2(connection)
            return nil
        }
        sqlite3_busy_timeout(connection, 1_000)
        let pragmas = DiskCacheIndex.synchronousPragmas(synchronous)
        guard sqlite3_exec(connection, pragmas, nil, nil, nil) == SQLITE_OK else {
            sqlite3_close_v2(connection)
            return nil
        }
        return connection
    }
}
