import GRDB

// Removing rows: one key, a condition, and the least-recently-used eviction that trims and hard
// limits share.

extension DiskCacheIndex {
    /// Where an eviction has got to in least-recently-used order (`accessed`, then `rowid`: the
    /// order of the `entry_accessed` index): the next batch starts after it.
    struct EvictionCursor: Sendable {
        var accessed = -Double.infinity
        var rowid = Int64.min
    }

    /// One batch of an eviction: the least-recently-used rows after `cursor`, at most `limit`,
    /// removed while `wanted(count, size)` says more must go (both as `accounting` counts the
    /// cache, after the rows removed so far); never a key of `sparing`. Inside the caller's
    /// transaction. Files are the caller's to remove after the commit.
    ///
    /// Keyset pagination, not `OFFSET`: a batch reads only the rows it returns (plus the spared
    /// ones it steps over), so evicting n rows costs O(n), wherever they sit in the index.
    ///
    /// - Returns: What was removed, the cursor for the next batch, and whether the rows ran out
    ///   (or `wanted` said stop) before `limit`.
    static func evictBatch(
        _ db: Database,
        after cursor: EvictionCursor,
        limit: Int,
        accounting: DiskCache.SizeAccounting,
        sparing: Set<String> = [],
        wanted: (_ count: Int, _ size: Int64) -> Bool
    ) throws -> (removal: Removal, cursor: EvictionCursor, isDone: Bool) {
        struct Candidate {
            var rowid: Int64
            var accessed: Double
            var key: String
            var size: Int64
            var file: String?
        }
        let select = try RawStatement(
            db,
            sql: """
                SELECT rowid, accessed, key, size, file FROM entry
                WHERE accessed >= ?1 AND (accessed > ?1 OR rowid > ?2) ORDER BY accessed, rowid LIMIT ?3
                """
        )
        let candidates = try select.run { statement in
            statement.bind(1, cursor.accessed)
            statement.bind(2, cursor.rowid)
            statement.bind(3, Int64(limit))
            var rows: [Candidate] = []
            rows.reserveCapacity(limit)
            while try statement.step() {
                rows.append(
                    Candidate(
                        rowid: statement.int64(0),
                        accessed: statement.double(1),
                        // Read only to spare: a String per row costs more than the comparison.
                        key: sparing.isEmpty ? "" : statement.text(2) ?? "",
                        size: statement.int64(3),
                        file: statement.text(4)
                    )
                )
            }
            return rows
        }
        var current = try totals(db, accounting: accounting)
        var removal = Removal()
        var next = cursor
        var doomed: [Int64] = []
        var isDone = candidates.count < limit
        for candidate in candidates {
            guard wanted(current.count, current.size) else {
                isDone = true
                break
            }
            next = EvictionCursor(accessed: candidate.accessed, rowid: candidate.rowid)
            if sparing.contains(candidate.key) { continue }
            doomed.append(candidate.rowid)
            removal.count += 1
            removal.bytes += candidate.size
            if let file = candidate.file { removal.files.append(file) }
            current.count -= 1
            current.size -= accountedSize(candidate.size, isFile: candidate.file != nil, accounting: accounting)
        }
        if sparing.isEmpty, !doomed.isEmpty {
            // The doomed rows are the first ones after the cursor: one statement deletes them all.
            let delete = try RawStatement(
                db,
                sql: """
                    DELETE FROM entry WHERE rowid IN (SELECT rowid FROM entry
                    WHERE accessed >= ?1 AND (accessed > ?1 OR rowid > ?2) ORDER BY accessed, rowid LIMIT ?3)
                    """
            )
            try delete.run { statement in
                statement.bind(1, cursor.accessed)
                statement.bind(2, cursor.rowid)
                statement.bind(3, Int64(doomed.count))
                _ = try statement.step()
            }
        } else {
            let delete = try RawStatement(db, sql: "DELETE FROM entry WHERE rowid = ?")
            for rowid in doomed {
                try delete.run { statement in
                    statement.bind(1, rowid)
                    _ = try statement.step()
                }
            }
        }
        return (removal, next, isDone || !wanted(current.count, current.size))
    }

    /// Removes least-recently-used rows, never those of `sparing`, until the accounted size is
    /// at most `target`; inside the caller's transaction.
    ///
    /// - Returns: What was removed, and whether the target was reached.
    static func evict(
        _ db: Database,
        downTo target: Int64,
        accounting: DiskCache.SizeAccounting,
        sparing: Set<String>
    ) throws -> (removal: Removal, reached: Bool) {
        var removal = Removal()
        var cursor = EvictionCursor()
        while true {
            let batch = try evictBatch(
                db,
                after: cursor,
                limit: 256,
                accounting: accounting,
                sparing: sparing,
                wanted: { _, size in size > target }
            )
            removal.count += batch.removal.count
            removal.files += batch.removal.files
            removal.bytes += batch.removal.bytes
            cursor = batch.cursor
            if batch.isDone { break }
        }
        return (removal, try totals(db, accounting: accounting).size <= target)
    }

    /// Deletes `key`'s row: one cached statement, bound and stepped through SQLite's C API (a
    /// statement prepared per call, as ``remove(_:where:arguments:limit:)`` does, costs more than
    /// the deletion).
    static func remove(_ db: Database, key: String) throws -> Removal {
        let delete = try RawStatement(db, sql: "DELETE FROM entry WHERE key = ? RETURNING file, size")
        var key = key
        return try key.withUTF8 { keyBytes in
            try delete.run { statement in
                statement.bind(1, keyBytes)
                var removal = Removal()
                while try statement.step() {
                    removal.count += 1
                    removal.bytes += statement.int64(1)
                    if let file = statement.text(0) { removal.files.append(file) }
                }
                return removal
            }
        }
    }

    /// Deletes the rows matched by `whereClause` (oldest access first, at most `limit`).
    static func remove(
        _ db: Database,
        where whereClause: String,
        arguments: StatementArguments = [],
        limit: Int? = nil
    ) throws -> Removal {
        let limitClause = limit.map { " ORDER BY accessed LIMIT \($0)" } ?? ""
        let rows = try Row.fetchAll(
            db,
            sql:
                "DELETE FROM entry WHERE key IN (SELECT key FROM entry WHERE \(whereClause)\(limitClause)) RETURNING file, size",
            arguments: arguments
        )
        var removal = Removal()
        removal.count = rows.count
        removal.files = rows.compactMap { $0[0] as String? }
        removal.bytes = rows.reduce(0) { $0 + ($1[1] as Int64) }
        return removal
    }
}
