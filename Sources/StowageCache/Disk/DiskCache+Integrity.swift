import Foundation
import GRDB
import GRDBSQLite
import Logging
import StowageCore
import Synchronization

// Damage in the index, wherever it is found. Opening reads only the schema (a few pages), so it
// costs the same at a million entries as at a thousand; the whole file is checked on the
// maintenance lane after each open (`PRAGMA quick_check`, which reads every page), and damage a
// query meets before that is handled where it is met. Both go to the corrupt-index policy:
// `.rebuild` empties the index in place when this handle is the cache's only user, `.fail`
// reports `.corrupt`.

extension DiskCache {
    /// Queues the whole-file check and the totals check on the maintenance lane.
    func scheduleIntegrityCheck() {
        maintenance.schedule(.integrityCheck) { [weak self] in try self?.checkIntegrity() }
    }

    /// Runs SQLite's `quick_check` over the whole index and checks the `totals` row against the
    /// entries, in one read snapshot beside the writers. Damage goes to the corrupt-index
    /// policy; wrong totals are rewritten. `close()` interrupts the check rather than wait for
    /// it (seconds at a million entries): the next open checks again.
    func checkIntegrity() throws {
        let maintenance = self.maintenance
        // Read before the check's snapshot begins: damage the check then finds may be what a
        // query met and a rebuild already emptied meanwhile (the snapshot still shows the old
        // pages), and the policy must not empty the rebuilt index, and what was written to it
        // since, a second time (seen once in ten loaded runs of
        // DiskCacheIntegrityCheckTests.damageMetByAReadRebuilds: two entries written after the
        // read's rebuild were gone at the next open).
        let resets = indexResets.load(ordering: .acquiring)
        let verdict: (damage: String?, totalsAreWrong: Bool)?
        do {
            verdict = try indexCall {
                try index.pool.read { db in
                    try Self.interruptible(db, stoppingWhen: maintenance) {
                        guard let damage = try DiskCacheIndex.quickCheck(db) else {
                            return (nil, try DiskCacheIndex.totalsDisagree(db))
                        }
                        return (damage, false)
                    }
                }
            }
        } catch let error as StowageError where (error.cause as? DatabaseError)?.resultCode == .SQLITE_INTERRUPT {
            return
        }
        guard let verdict else { return }
        if let damage = verdict.damage {
            let error = DatabaseError(resultCode: .SQLITE_CORRUPT, message: damage)
            if !recoverFromDamage(error, seenResets: resets) {
                configuration.logger.error(
                    "disk cache index is damaged; queries that meet the damage fail with .corrupt",
                    metadata: ["path": "\(index.path)", "damage": "\(damage)", "cache": "\(configuration.name)"]
                )
            }
            return
        }
        if verdict.totalsAreWrong {
            try repairTotalsIfWrong()
        } else {
            commits.totalsAreVerified.store(true, ordering: .releasing)
        }
    }

    /// Runs `body` on `db` so that draining `maintenance` interrupts it (`sqlite3_interrupt`,
    /// which SQLite checks inside `quick_check`, unlike the progress handler): a long read never
    /// holds up `close()`.
    private static func interruptible<T>(
        _ db: Database,
        stoppingWhen maintenance: DiskCacheMaintenance,
        _ body: () throws -> T
    ) throws -> T? {
        guard let connection = db.sqliteConnection else { return nil }
        // An address, not the pointer: the connection stays open until close() has drained the
        // lane, and sqlite3_interrupt may be called from any thread.
        let address = Int(bitPattern: connection)
        return try maintenance.interruptible({ sqlite3_interrupt(OpaquePointer(bitPattern: address)) }, body)
    }

    /// Whether `error` says the index file is damaged.
    static func isDamage(_ error: DatabaseError) -> Bool {
        [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode.primaryResultCode)
    }

    /// The corrupt-index policy for damage found while the cache is open.
    ///
    /// With ``CorruptIndexPolicy/rebuild``, and when no other handle (in this process or
    /// another) has the cache open, the index is emptied in place (`DiskCacheIndex.reset`), the
    /// value files go (only the index can tell whose they are), and the generation advances, so
    /// memory tiers over the cache drop what they hold: the cache starts empty, as it does when
    /// the damage is found at open. Other processes wait on `open.lock` meanwhile.
    ///
    /// - Parameter seenResets: ``indexResets`` when the failed operation began: if another
    ///   caller has emptied the index since, nothing more is done.
    /// - Returns: Whether the index is fresh, so the operation that met the damage can run again;
    ///   `false` when the policy is ``CorruptIndexPolicy/fail``, another user has the cache open,
    ///   or the reset failed (logged).
    func recoverFromDamage(_ error: DatabaseError, seenResets: Int) -> Bool {
        guard configuration.corruptIndexPolicy == .rebuild else { return false }
        do {
            // During init this thread holds open.lock already, and a second descriptor's
            // flock(2) would wait for it forever.
            let openLock = try isOpening.load(ordering: .acquiring) ? nil : LockFile(path: openLockPath)
            try openLock?.lock(.exclusive)
            defer { openLock?.unlock() }
            if resetRan(since: seenResets) { return true }
            guard try processLock.tryLock(.exclusive) else {
                // A failed conversion drops the shared lock held (flock(2)); nobody can open the
                // cache meanwhile, as this handle holds open.lock.
                try processLock.lock(.shared)
                configuration.logger.error(
                    "disk cache index is damaged and another handle has the cache open, so it was not rebuilt",
                    metadata: ["path": "\(index.path)", "error": "\(error)", "cache": "\(configuration.name)"]
                )
                return false
            }
            defer { try? processLock.lock(.shared) }
            configuration.logger.warning(
                "disk cache index is damaged; emptying it in place",
                metadata: ["path": "\(index.path)", "error": "\(error)", "cache": "\(configuration.name)"]
            )
            storeGeneration.advance()
            defer { storeGeneration.advance() }
            // Counted when the reset begins and again when it ends: a write that read the count
            // before its file and commits on the fresh index between `reset` and the end must see
            // it moved, or it says `.stored` for a row whose file the reset removed (seen under a
            // loaded run of DiskCacheDamagedWriteTests.syncFileWrite); a caller that reads it
            // in the middle still sees it move once the reset ends, and never resets again.
            indexResets.add(1, ordering: .releasing)
            defer { indexResets.add(1, ordering: .releasing) }
            // The old value files go before the index is emptied, not after: once it is empty,
            // readers and writers use it at once, and a removal still walking data/ deleted the
            // files (and hash directories) of values written to the fresh index (a write failed
            // with ENOENT, or its entry was gone at the next open). A file written before the
            // reset belongs to a row the reset drops; the next open's orphan collection takes it.
            try Self.removeOldValueFiles(files, configuration: configuration)
            try DiskCacheIndex.reset(index.pool)
            accessLog.withLock { $0.removeAll() }
            return true
        } catch {
            configuration.logger.error(
                "disk cache index is damaged and could not be emptied: \(error)",
                metadata: ["path": "\(index.path)", "cache": "\(configuration.name)"]
            )
            return false
        }
    }
}
