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
    /// The rows go with `secure_delete = FAST` (``withFastSecureDelete(_:_:)``). Each `DELETE`
    /// removes at most `rowsPerStatement` rows: a statement that fires the totals trigger keeps a
    /// statement journal of the pages it changes, which SQLite spills to a temporary file past
    /// 64 KiB unless the connection's `temp_store` is `MEMORY` (``evictionWrite(_:)`` sets it; a
    /// commit's cull, inside a transaction where it cannot be changed, deletes 16 rows at a time).
    ///
    /// - Returns: What was removed, the cursor for the next batch, and whether the rows ran out
    ///   (or `wanted` said stop) before `limit`.
    static func evictBatch(
        _ db: Database,
        after cursor: EvictionCursor,
        limit: Int,
        accounting: DiskCache.SizeAccounting,
        sparing: Set<String> = [],
        rowsPerStatement: Int = .max,
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
        var hasSpared = false
        for candidate in candidates {
            guard wanted(current.count, current.size) else {
                isDone = true
                break
            }
            next = EvictionCursor(accessed: candidate.accessed, rowid: candidate.rowid)
            if sparing.contains(candidate.key) {
                hasSpared = true
                continue
            }
            doomed.append(candidate.rowid)
            removal.count += 1
            removal.bytes += candidate.size
            if let file = candidate.file { removal.files.append(file) }
            current.count -= 1
            current.size -= accountedSize(candidate.size, isFile: candidate.file != nil, accounting: accounting)
        }
        try withFastSecureDelete(db) {
            if !hasSpared, !doomed.isEmpty {
                // The doomed rows are the first ones after the cursor: each statement deletes the
                // first ones left.
                let delete = try RawStatement(
                    db,
                    sql: """
                        DELETE FROM entry WHERE rowid IN (SELECT rowid FROM entry
                        WHERE accessed >= ?1 AND (accessed > ?1 OR rowid > ?2) ORDER BY accessed, rowid LIMIT ?3)
                        """
                )
                var left = doomed.count
                while left > 0 {
                    let count = min(left, max(1, rowsPerStatement))
                    try delete.run { statement in
                        statement.bind(1, cursor.accessed)
                        statement.bind(2, cursor.rowid)
                        statement.bind(3, Int64(count))
                        _ = try statement.step()
                    }
                    left -= count
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
        }
        return (removal, next, isDone || !wanted(current.count, current.size))
    }

    /// Runs `body`, an eviction, with the connection's `secure_delete` at `FAST`, then puts it
    /// back as it was.
    ///
    /// Debian's SQLite is built with `SQLITE_SECURE_DELETE`: every page a deletion frees is
    /// zeroed and written to the WAL, then copied into the file by the next checkpoint, a write
    /// of every page of the rows removed. `FAST` zeroes deleted content only on pages written
    /// anyway: trimming half of 10^6 entries with the schema's trigger went from 22–26 s to
    /// 13–16 s on the sqlite3 shell, on the loaded development machine. An evicted value's bytes
    /// may so stay in a free page of the index until SQLite reuses it, as they do with SQLite's
    /// default build; they are never reachable through the index. Removals the caller asks for
    /// (`removeData`, `removeAll`, `removeAll(tagged:)`) keep the build's setting.
    static func withFastSecureDelete<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        let previous = try RawStatement(db, sql: "PRAGMA secure_delete").run { statement in
            try statement.step() ? statement.int64(0) : 0
        }
        guard previous == 1 else { return try body() }
        try RawStatement(db, sql: "PRAGMA secure_delete = FAST").run { _ = try $0.step() }
        defer { _ = try? RawStatement(db, sql: "PRAGMA secure_delete = ON").run { _ = try $0.step() } }
        return try body()
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
                // Inside the commit's transaction: see `evictBatch`'s rowsPerStatement.
                rowsPerStatement: 16,
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
