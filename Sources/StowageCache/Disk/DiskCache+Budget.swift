import Foundation
import StowageCore

// Hard size limits and the volume's capacity, checked before a write (see
// ``DiskCache/SizeLimitEnforcement/hard`` and ``DiskCache/Configuration/checksVolumeCapacity``).

extension DiskCache.Configuration {
    /// The hard limit the commit queue enforces; `nil` without one.
    var budget: DiskCacheCommitQueue.Budget? {
        guard sizeLimitEnforcement == .hard, let sizeLimit else { return nil }
        return .init(
            limit: sizeLimit.rawValue,
            target: Int64(Double(sizeLimit.rawValue) * trimRatio),
            accounting: sizeAccounting
        )
    }
}

extension DiskCache.Configuration {
    /// The limits the commits cull (``DiskCacheCommitQueue/Cull``): the count limit, and the size
    /// limit unless it is hard (the budget enforces that one); `nil` without either.
    var cull: DiskCacheCommitQueue.Cull? {
        let sizeLimit = sizeLimitEnforcement == .trimAfterWrite ? sizeLimit?.rawValue : nil
        guard countLimit != nil || sizeLimit != nil else { return nil }
        return .init(countLimit: countLimit, sizeLimit: sizeLimit, trimRatio: trimRatio, accounting: sizeAccounting)
    }
}

extension DiskCache {
    /// Refuses, before any byte is written, a value that cannot fit the cache's hard limit or the
    /// volume.
    func checkRoom(for count: Int) throws {
        let isFile = count > configuration.inlineThreshold
        if let budget = configuration.budget {
            let cost = DiskCacheIndex.accountedSize(Int64(count), isFile: isFile, accounting: budget.accounting)
            if cost > budget.limit {
                throw StowageError(
                    code: .noSpace,
                    message: """
                        a value of \(ByteCount(cost).formatted(.compact)) cannot fit the disk cache '\(configuration.name)', \
                        whose hard size limit is \(ByteCount(budget.limit).formatted(.compact)); raise sizeLimit or store \
                        the value elsewhere
                        """,
                    path: directory.fileSystemPath
                )
            }
        }
        guard isFile, configuration.checksVolumeCapacity else { return }
        let capacity = try VolumeCapacity.forVolume(containing: directory)
        if Int64(count) > capacity.availableForImportantUsage.rawValue {
            throw StowageError(
                code: .noSpace,
                message: """
                    a value of \(ByteCount(Int64(count)).formatted(.compact)) is larger than the space the volume has for \
                    important data (\(capacity.availableForImportantUsage.formatted(.compact)) of \
                    \(capacity.available.formatted(.compact)) free); nothing was written — free space on the volume
                    """,
                path: directory.fileSystemPath
            )
        }
    }

    /// Refuses a value of `length` bytes that the cache already knows it has no room for, for a
    /// caller that must say whether it will store before it writes (the HTTP cache's
    /// `Cache-Status` goes out before a streamed body is read): the checks of a write of that
    /// length, one `statvfs` at most.
    ///
    /// - Parameter length: The value's length; `nil` when not known yet, checked as the smallest
    ///   value kept in a file (``Configuration/inlineThreshold`` + 1 bytes).
    /// - Throws: `StowageError` `.noSpace` when the value cannot fit the hard size limit, or the
    ///   volume (``Configuration/checksVolumeCapacity``); the message says which.
    package func checkRoom(forValueOfLength length: Int64?) throws {
        try checkRoom(for: Int(clamping: length ?? Int64(configuration.inlineThreshold + 1)))
    }

    /// Runs a commit, turning the commit queue's ``DiskCacheCommitQueue/OverBudget`` into a typed
    /// error and SQLite's errors into `StowageError`.
    func committing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try indexCall(body)
        } catch is DiskCacheCommitQueue.OverBudget {
            throw overBudgetError()
        }
    }

    /// ``committing(_:)-(()->T)`` for a body that suspends.
    func committing<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await indexCall(body)
        } catch is DiskCacheCommitQueue.OverBudget {
            throw overBudgetError()
        }
    }

    private func overBudgetError() -> StowageError {
        StowageError(
            code: .noSpace,
            message: """
                the values written together do not fit the disk cache '\(configuration.name)''s hard size limit \
                even with every other entry evicted; raise sizeLimit
                """,
            path: directory.fileSystemPath
        )
    }

    /// Removes the files of entries a commit evicted (to stay within the hard limit, or in its
    /// cull), and counts them; checks the totals in the background when the commit began a cull.
    func settleEvictions(_ outcome: DiskCacheCommitQueue.Outcome) {
        if outcome.beganCull { scheduleTotalsCheck() }
        let evicted = outcome.evicted
        guard evicted.count > 0 else { return }
        files.remove(evicted.files)
        counters.recordEviction(outcome.evictedFor, count: evicted.count, bytes: evicted.bytes)
    }
}
