import Foundation
import GRDB
import Logging
import StowageCore
import Synchronization

extension DiskCache {
    /// What one trim removed.
    public struct TrimReport: Sendable, Hashable {
        /// Entries removed because they expired or passed the age limit.
        public var expired = 0
        /// Least-recently-used entries removed to get back under the limits.
        public var evicted = 0
        /// Entries and bytes left afterwards.
        public var remainingCount = 0
        /// Bytes of values left afterwards.
        public var remainingSize = ByteCount.zero
    }

    /// Rows removed per transaction, so writers of other keys wait at most one batch (about
    /// 10 ms). Each transaction costs about what a few dozen row deletions do (its commit, the
    /// totals read, GRDB's writer hop), and a page of the table or an index holding rows of two
    /// batches is written to the log by each: the least recently used rows are scattered over
    /// the table's pages (a row keeps the place of its insertion; reads move its access time),
    /// so larger batches share more pages. Trimming 102,400 of the bench's 10^6 rows in the
    /// sqlite3 shell (with ``DiskCacheIndex/evictionCacheSize``) made 212,334 `pwrite`s (log and
    /// checkpoints, `strace -c`) in batches of 1,024, 169,936 in batches of 2,048 and 140,552 in
    /// batches of 4,096, whose transactions took about 20 ms; 256 rows a batch took half of 10^6
    /// entries in 14.7 s.
    static let trimBatchSize = 2_048

    /// Applies the limits now: removes expired and too-old entries, then, if size or count is
    /// over its limit, least-recently-used entries until both are at their targets.
    ///
    /// Runs after any trim already scheduled in the background, so when it returns the
    /// cache is within its limits as of the call.
    @discardableResult
    public func trim() async throws -> TrimReport {
        try await trim(freeing: .zero)
    }

    /// The synchronous overload of `trim()`: the same work on the calling thread.
    @discardableResult
    public func trim() throws -> TrimReport {
        try trim(freeing: .zero)
    }

    /// Trims as `trim()` does, then goes on below the limits until `bytes` of values are gone
    /// since the call (expired ones count), least recently used first: what storage pressure
    /// asks (``purge(_:)``).
    @discardableResult
    public func trim(freeing bytes: ByteCount) async throws -> TrimReport {
        guard let report = try await maintenance.run({ try self.trimNow(freeing: bytes.rawValue) }) else {
            throw closedError()
        }
        return report
    }

    /// The synchronous overload of `trim(freeing:)`: the same work on the calling thread.
    @discardableResult
    public func trim(freeing bytes: ByteCount) throws -> TrimReport {
        guard let report = try maintenance.run({ try trimNow(freeing: bytes.rawValue) }) else { throw closedError() }
        return report
    }

    func isOverLimit(count: Int, size: Int64) -> Bool {
        if let countLimit = configuration.countLimit, count > countLimit { return true }
        if let sizeLimit = configuration.sizeLimit, size > sizeLimit.rawValue { return true }
        return false
    }

    /// Queues a background trim on the maintenance lane unless one is already waiting to run.
    func scheduleTrim() {
        maintenance.schedule(.trim) { [weak self] in _ = try self?.trimNow() }
    }

    /// Queues a check of the `totals` row against the rows (``repairTotalsIfWrong()``) on the
    /// maintenance lane, unless one is already waiting to run: a cull that began in a commit
    /// evicts on the word of the row, as a trim does after the same check.
    func scheduleTotalsCheck() {
        maintenance.schedule(.totalsCheck) { [weak self] in try self?.repairTotalsIfWrong() }
    }

    /// The trim itself; always on the maintenance lane.
    private func trimNow(freeing bytesToFree: Int64 = 0) throws -> TrimReport {
        try flushStagedWrites()
        try flushAccessLog()
        var report = TrimReport()
        var expiredBytes: Int64 = 0
        let accounting = configuration.sizeAccounting
        let sizeAtStart =
            bytesToFree > 0
            ? try indexCall { try index.pool.read { db in try DiskCacheIndex.totals(db, accounting: accounting) } }.size
            : 0
        let now = configuration.clock.now().timeIntervalSince1970
        // 1. Expired and too-old entries.
        var condition = "(expires IS NOT NULL AND expires <= ?)"
        var arguments: StatementArguments = [now]
        if let maximumAge = configuration.maximumAge?.timeInterval {
            condition += " OR \(configuration.ageBasis.rawValue) < ?"
            arguments += [now - maximumAge]
        }
        while true {
            let removal = try indexCall {
                try index.evictionWrite { db in
                    try DiskCacheIndex.withFastSecureDelete(db) {
                        try DiskCacheIndex.remove(db, where: condition, arguments: arguments, limit: Self.trimBatchSize)
                    }
                }
            }
            files.remove(removal.files)
            report.expired += removal.count
            expiredBytes += removal.bytes
            if removal.count < Self.trimBatchSize { break }
        }
        counters.recordEviction(.expired, count: report.expired, bytes: expiredBytes)

        // 2. Least recently used, until back at the targets of the limits that were exceeded.
        var totals = try indexCall {
            try index.pool.read { db in try DiskCacheIndex.totals(db, accounting: accounting) }
        }
        if isOverLimit(count: totals.count, size: totals.size) {
            // Before evicting on the word of the `totals` row, check it against the rows: one
            // scan in a read snapshot, paid once per trim (a trim takes the cache down to
            // trimRatio of its limits, so the scan is spread over that many writes).
            try repairTotalsIfWrong()
            totals = try indexCall {
                try index.pool.read { db in try DiskCacheIndex.totals(db, accounting: accounting) }
            }
        }
        var countTarget = configuration.countLimit.flatMap {
            totals.count > $0 ? Int(Double($0) * configuration.trimRatio) : nil
        }
        var sizeTarget = configuration.sizeLimit.flatMap {
            totals.size > $0.rawValue ? Int64(Double($0.rawValue) * configuration.trimRatio) : nil
        }
        if let cull = commits.takeCullTarget() {
            // A cull in progress (`DiskCacheCommitQueue.Cull`) is a trim spread over the writes
            // that began when the cache went over a limit: this trim finishes it.
            countTarget = [countTarget, cull.count].compactMap { $0 }.min()
            sizeTarget = [sizeTarget, cull.size].compactMap { $0 }.min()
        }
        if bytesToFree > 0 {
            // Storage pressure: below the limits if need be.
            sizeTarget = min(sizeTarget ?? .max, max(0, sizeAtStart - bytesToFree))
        }
        var evictedForCount = 0
        var evictedForSize = 0
        var bytesForCount: Int64 = 0
        var bytesForSize: Int64 = 0
        while (countTarget.map { totals.count > $0 } ?? false) || (sizeTarget.map { totals.size > $0 } ?? false) {
            let overCount = countTarget.map { totals.count > $0 } ?? false
            let (removal, after) = try indexCall {
                try index.evictionWrite { db in
                    // From the oldest row each time: no row is spared, so the ones before the
                    // last batch's cursor are gone, and an access time moved back by another
                    // writer meanwhile is not skipped.
                    let batch = try DiskCacheIndex.evictBatch(
                        db,
                        after: DiskCacheIndex.EvictionCursor(),
                        limit: Self.trimBatchSize,
                        accounting: accounting
                    ) { count, size in
                        (countTarget.map { count > $0 } ?? false) || (sizeTarget.map { size > $0 } ?? false)
                    }
                    return (batch.removal, try DiskCacheIndex.totals(db, accounting: accounting))
                }
            }
            files.remove(removal.files)
            if overCount {
                evictedForCount += removal.count
                bytesForCount += removal.bytes
            } else {
                evictedForSize += removal.count
                bytesForSize += removal.bytes
            }
            totals = after
            if removal.count == 0 { break }
        }
        counters.recordEviction(.countLimit, count: evictedForCount, bytes: bytesForCount)
        counters.recordEviction(.costLimit, count: evictedForSize, bytes: bytesForSize)
        report.evicted = evictedForCount + evictedForSize
        let logical = try indexCall { try index.pool.read { db in try DiskCacheIndex.totals(db) } }
        report.remainingCount = logical.count
        report.remainingSize = ByteCount(logical.size)
        return report
    }
}
