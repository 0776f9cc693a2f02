import GRDBSQLite
import Synchronization

/// Copies the index's write-ahead log back into the database file in the background, so
/// writers do not wait for it.
///
/// SQLite checkpoints on the committing connection by default (every 1,000 WAL pages): the
/// writer that crosses the mark copies the pages and waits for two `fdatasync`s, about 5 µs on
/// every 1 KiB set averaged out (`disk-cache.set-1KiB`). Here the writer's connection only
/// checkpoints past ``fallbackPages`` (a bound on the WAL should the checkpoints fall behind),
/// and the commit queue calls ``commitFinished()`` after each commit: every
/// ``commitsPerCheckpoint`` commits the cache queues a `PASSIVE` checkpoint
/// (``checkpoint()``) on its maintenance lane, on a connection of the checkpointer's own, beside
/// the writers (a passive checkpoint takes no lock a writer needs). Durability is unchanged: a
/// commit is in the WAL, and synced as the durability says, before it returns.
///
/// The log starts over from its beginning only when a write begins with every frame copied.
/// A passive checkpoint copies the frames there were when it began, and a writer that commits
/// all the while appends more meanwhile, so under a steady stream of writes the background
/// checkpoints never catch up (measured: the log grew by every commit until the writer's
/// fallback won the checkpoint lock, at up to 14,700 frames, and past 16,000 in a third of the
/// runs of `DiskCacheDurabilityTests`' bound). So when a background checkpoint finds the log
/// past ``restartPages``, the next committing writer copies the rest itself
/// (``catchUpIfBehind()``), with the other writers of the commit queue waiting behind it: the
/// copy then reaches the end of the log, and the next write starts the log over.
final class DiskCacheCheckpointer: Sendable {
    /// WAL pages past which the writer's own connection checkpoints anyway.
    static let fallbackPages = 8_000
    /// Commits between background checkpoints (a 1 KiB set writes about 5 pages).
    static let commitsPerCheckpoint = 200
    /// WAL frames past which the committing writer catches the checkpoints up
    /// (``catchUpIfBehind()``).
    static let restartPages = fallbackPages / 2

    private let path: String
    private let synchronous: Bool
    /// The index's `cache_size`, when it sets one.
    private let pageCachePragma: String?
    /// Commits since the last checkpoint was asked for.
    private let commits = Mutex(0)
    /// Opened on the first checkpoint; used by one checkpoint at a time (the maintenance lane's).
    private let connection = Mutex<OpaquePointer?>(nil)
    /// Checkpoints run so far (whether or not they could open the index): tests wait for it
    /// before they check what a checkpoint left alone.
    private let attempts = Atomic<Int>(0)
    var checkpointsAttempted: Int { attempts.load(ordering: .relaxed) }
    /// Set when a background checkpoint found the log past ``restartPages``; cleared when a
    /// writer's checkpoint copied the whole log.
    private let isBehind = Atomic<Bool>(false)

    init(path: String, synchronous: Bool, pageCachePragma: String? = nil) {
        self.path = path
        self.synchronous = synchronous
        self.pageCachePragma = pageCachePragma
    }

    /// Frees a connection `close()` did not (a cache released without closing).
    deinit {
        connection.withLock { connection in
            if let connection { sqlite3_close_v2(connection) }
        }
    }

    /// Counts a commit.
    ///
    /// - Returns: Whether a checkpoint is due (every ``commitsPerCheckpoint`` commits): the
    ///   caller queues ``checkpoint()``.
    func commitFinished() -> Bool {
        commits.withLock { commits in
            commits += 1
            guard commits >= Self.commitsPerCheckpoint else { return false }
            commits = 0
            return true
        }
    }

    /// Closes the connection; a later ``checkpoint()`` would open another, so the cache calls
    /// this once its maintenance lane has drained.
    func close() {
        connection.withLock { connection in
            if let open = connection { sqlite3_close_v2(open) }
            connection = nil
        }
    }

    /// One passive checkpoint, on the maintenance lane; failures are left to the next one (and
    /// to the writer's fallback).
    func checkpoint() {
        let log = passiveCheckpoint()
        if let log, log.frames >= Self.restartPages { isBehind.store(true, ordering: .relaxed) }
        attempts.add(1, ordering: .relaxed)
    }

    /// Called by the commit queue's leader after its commit, before the next batch commits: when
    /// the background checkpoints have fallen behind, one passive checkpoint here, which waits
    /// for a background one that is running and then copies up to the end of the log (nothing is
    /// committed meanwhile but by other processes or writes outside the queue).
    func catchUpIfBehind() {
        guard isBehind.load(ordering: .relaxed) else { return }
        if let log = passiveCheckpoint(), log.copied >= log.frames { isBehind.store(false, ordering: .relaxed) }
    }

    /// A `PASSIVE` checkpoint on the checkpointer's connection: the frames in the log and the
    /// frames copied, or `nil` when it failed.
    private func passiveCheckpoint() -> (frames: Int32, copied: Int32)? {
        connection.withLock { connection in
            if connection == nil {
                connection = Self.open(path: path, synchronous: synchronous, pageCachePragma: pageCachePragma)
            }
            guard let connection else { return nil }
            var frames: Int32 = 0
            var copied: Int32 = 0
            let status = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied)
            return status == SQLITE_OK ? (frames, copied) : nil
        }
    }

    private static func open(path: String, synchronous: Bool, pageCachePragma: String?) -> OpaquePointer? {
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
        let pragmas = DiskCacheIndex.synchronousPragmas(synchronous) + (pageCachePragma.map { "; " + $0 } ?? "")
        guard sqlite3_exec(connection, pragmas, nil, nil, nil) == SQLITE_OK else {
            sqlite3_close_v2(connection)
            return nil
        }
        return connection
    }
}
