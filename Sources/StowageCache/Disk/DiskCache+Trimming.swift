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

    /// Rows removed per transaction, so writers of other keys wait at most one batch.
    static let trimBatchSize = 256

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
        try await withCheckedThrowingContinuation { continuation in
            trimQueue.async {
                continuation.resume(with: Result { try self.trimNow(freeing: bytes.rawValue) })
            }
        }
    }

    /// The synchronous overload of `trim(freeing:)`: the same work on the calling thread.
    @discardableResult
    public func trim(freeing bytes: ByteCount) throws -> TrimReport {
        try trimQueue.sync { try trimNow(freeing: bytes.rawValue) }
    }

    func isOverLimit(count: Int, size: Int64) -> Bool {
        if let countLimit = configuration.countLimit, count > countLimit { return true }
        if let sizeLimit = configuration.sizeLimit, size > sizeLimit.rawValue { return true }
        return false
    }

    /// Starts a background trim unless one is already waiting to run.
    func scheduleTrim() {
        guard trimScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        trimQueue.async { [weak self] in
            guard let self else { return }
            self.trimScheduled.store(false, ordering: .releasing)
            do {
                _ = try self.trimNow()
            } catch let error as StowageError where error.code == .closed {
                // close() ran first (its own commit may have scheduled this trim): nothing
                // failed, and the next handle trims after its first write over the limit.
            } catch {
                self.configuration.logger.error(
                    "background trim failed: \(error)",
                    metadata: ["cache": "\(self.configuration.name)"]
                )
            }
        }
    }

    /// The trim itself; always on `trimQueue`.
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
                try index.write { db in
                    try DiskCacheIndex.remove(db, where: condition, arguments: arguments, limit: Self.trimBatchSize)
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
            // Before evicting on the word of the `totals` row, check it against the rows.
            _ = try repairTotalsIfWrong()
            totals = try indexCall {
                try index.pool.read { db in try DiskCacheIndex.totals(db, accounting: accounting) }
            }
        }
        let countTarget = configuration.countLimit.flatMap {
            totals.count > $0 ? Int(Double($0) * configuration.trimRatio) : nil
        }
        var sizeTarget = configuration.sizeLimit.flatMap {
            totals.size > $0.rawValue ? Int64(Double($0.rawValue) * configuration.trimRatio) : nil
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
                try index.write { db in
                    // Select exactly what is needed (at most one batch) in LRU order.
                    let rows = try Row.fetchAll(
                        db,
                        sql: "SELECT key, size, file IS NOT NULL FROM entry ORDER BY accessed LIMIT ?",
                        arguments: [Self.trimBatchSize]
                    )
                    var current = try DiskCacheIndex.totals(db, accounting: accounting)
                    var keys: [String] = []
                    for row in rows {
                        let stillOver =
                            (countTarget.map { current.count > $0 } ?? false)
                            || (sizeTarget.map { current.size > $0 } ?? false)
                        guard stillOver else { break }
                        keys.append(row[0])
                        current.count -= 1
                        current.size -= DiskCacheIndex.accountedSize(row[1], isFile: row[2], accounting: accounting)
                    }
                    var removal = DiskCacheIndex.Removal()
                    for key in keys {
                        let part = try DiskCacheIndex.remove(db, where: "key = ?", arguments: [key])
                        removal.count += part.count
                        removal.files += part.files
                        removal.bytes += part.bytes
                    }
                    return (removal, try DiskCacheIndex.totals(db, accounting: accounting))
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
