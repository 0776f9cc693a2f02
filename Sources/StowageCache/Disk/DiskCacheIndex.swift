import Foundation
import GRDB
import Logging
import StowageCore

/// The disk cache's SQLite index, through GRDB in WAL mode: one row per entry, small values
/// inline, and a `totals` row kept by triggers so size and count never need a scan.
///
/// Several processes may open the same index: SQLite's locks serialize the writers (each write
/// is an `IMMEDIATE` transaction, so none fails on a lock upgrade) and WAL lets readers run
/// during writes. Triggers keep `totals` right whichever process writes.
struct DiskCacheIndex: Sendable {
    /// One entry as the index records it.
    struct Entry {
        var file: String?
        var inline: Data?
        var size: Int64
        var created: Double
        var modified: Double
        var accessed: Double
        var expires: Double?
        /// A label for ``DiskCache/removeAll(tagged:)``.
        var tag: String? = nil
        /// Seconds the value took to compute, recorded by memoize for early recomputation.
        var computeSeconds: Double? = nil
        /// CRC-32C of the value, verified on read; `nil` in rows written before format 3.
        var checksum: UInt32? = nil
    }

    /// What a removal took out of the index: the files to unlink after the commit.
    struct Removal {
        var count = 0
        var files: [String] = []
    }

    let pool: DatabasePool
    let path: String

    /// The format this code writes, in SQLite's `user_version`. Format 1 (no version stored,
    /// user_version 0) lacked tags, compute times and the file-allocation total; format 2 the
    /// values' checksums. Both are migrated in place on open; their rows keep no checksum and
    /// are served unverified until they are rewritten.
    static let formatVersion = 3

    /// Bytes a value file takes, estimated as its size rounded up to 4 KiB blocks (the block of
    /// ext4, XFS and APFS), kept in `totals.file_allocated` so reports need no scan.
    private static func fileAllocation(_ row: String) -> String {
        "CASE WHEN \(row).file IS NOT NULL THEN (\(row).size + 4095) / 4096 * 4096 ELSE 0 END"
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS entry (
            key TEXT NOT NULL PRIMARY KEY,
            file TEXT,
            inline BLOB,
            size INTEGER NOT NULL,
            created REAL NOT NULL,
            modified REAL NOT NULL,
            accessed REAL NOT NULL,
            expires REAL,
            tag TEXT,
            compute REAL,
            checksum INTEGER
        );
        CREATE INDEX IF NOT EXISTS entry_accessed ON entry(accessed);
        CREATE INDEX IF NOT EXISTS entry_expires_size ON entry(expires, size) WHERE expires IS NOT NULL;
        CREATE INDEX IF NOT EXISTS entry_tag ON entry(tag) WHERE tag IS NOT NULL;
        CREATE TABLE IF NOT EXISTS totals (
            id INTEGER PRIMARY KEY CHECK (id = 0),
            count INTEGER NOT NULL,
            size INTEGER NOT NULL,
            file_allocated INTEGER NOT NULL DEFAULT 0
        );
        INSERT OR IGNORE INTO totals (id, count, size) VALUES (0, 0, 0);
        CREATE TRIGGER IF NOT EXISTS entry_inserted AFTER INSERT ON entry BEGIN
            UPDATE totals SET count = count + 1, size = size + NEW.size,
                file_allocated = file_allocated + \(fileAllocation("NEW")) WHERE id = 0;
        END;
        CREATE TRIGGER IF NOT EXISTS entry_deleted AFTER DELETE ON entry BEGIN
            UPDATE totals SET count = count - 1, size = size - OLD.size,
                file_allocated = file_allocated - \(fileAllocation("OLD")) WHERE id = 0;
        END;
        CREATE TRIGGER IF NOT EXISTS entry_changed AFTER UPDATE OF size, file ON entry BEGIN
            UPDATE totals SET size = size - OLD.size + NEW.size,
                file_allocated = file_allocated - \(fileAllocation("OLD")) + \(fileAllocation("NEW")) WHERE id = 0;
        END;
        """

    /// Brings format 1 to format 2: nullable columns (SQLite adds them without rewriting rows),
    /// the file-allocation total computed once, and the triggers and expiry index replaced.
    static let migrationFrom1 = """
        ALTER TABLE entry ADD COLUMN tag TEXT;
        ALTER TABLE entry ADD COLUMN compute REAL;
        ALTER TABLE totals ADD COLUMN file_allocated INTEGER NOT NULL DEFAULT 0;
        UPDATE totals SET file_allocated = (SELECT COALESCE(SUM(\(fileAllocation("entry"))), 0) FROM entry) WHERE id = 0;
        DROP TRIGGER IF EXISTS entry_inserted;
        DROP TRIGGER IF EXISTS entry_deleted;
        DROP TRIGGER IF EXISTS entry_resized;
        DROP INDEX IF EXISTS entry_expires;
        """

    /// Brings format 2 to format 3: the values' checksums (NULL for the rows already there).
    static let migrationFrom2 = "ALTER TABLE entry ADD COLUMN checksum INTEGER;"

    /// Opens (creating if needed) the index at `path`.
    ///
    /// - Throws: GRDB's `DatabaseError` as SQLite reports it (`SQLITE_NOTADB`,
    ///   `SQLITE_CORRUPT` for a damaged file); the caller decides about recovery.
    ///   A newer format than ``formatVersion`` is ``StowageError`` `.unsupported`, never a misread.
    init(path: String, synchronous: Bool, logger: Logger) throws {
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(30)
        configuration.label = "stowage.disk-cache"
        configuration.prepareDatabase { db in
            try db.execute(sql: synchronous ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        self.path = path
        try pool.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                try Self.prepareFormat(db, path: path, logger: logger)
                return .commit
            }
        }
        // A cheap check that the file is a sound database before trusting it.
        try pool.read { db in
            _ = try Row.fetchOne(db, sql: "SELECT count, size FROM totals WHERE id = 0")
            _ = try Row.fetchOne(db, sql: "SELECT key FROM entry LIMIT 1")
        }
    }

    /// Creates the schema in a new file, migrates format 1, refuses a newer format.
    private static func prepareFormat(_ db: Database, path: String, logger: Logger) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if version > formatVersion {
            throw StowageError(
                code: .unsupported,
                message: "the disk cache index \(path) has format \(version), newer than this Stowage's "
                    + "\(formatVersion); open it with the newer version, or give this one another directory",
                path: path
            )
        }
        if version < formatVersion, try db.tableExists("entry") {
            if version < 2 { try db.execute(sql: migrationFrom1) }
            try db.execute(sql: migrationFrom2)
            logger.notice(
                "disk cache index migrated",
                metadata: ["path": "\(path)", "from": "\(max(version, 1))", "to": "\(formatVersion)"]
            )
        }
        try db.execute(sql: schema)
        try db.execute(sql: "PRAGMA user_version = \(formatVersion)")
    }

    /// An `IMMEDIATE` write transaction: the write lock is taken up front, so concurrent
    /// writers from other processes wait (busy timeout) instead of failing on upgrade.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    func entry(forKey key: String) throws -> Entry? {
        // One SELECT is atomic by itself: skipping GRDB's BEGIN/COMMIT around it halves a read.
        try pool.unsafeRead { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT file, inline, size, created, modified, accessed, expires, tag, compute, checksum
                    FROM entry WHERE key = ?
                    """
            )
            guard let row = try Row.fetchOne(statement, arguments: [key]) else { return nil }
            return Entry(
                file: row[0],
                inline: row[1],
                size: row[2],
                created: row[3],
                modified: row[4],
                accessed: row[5],
                expires: row[6],
                tag: row[7],
                computeSeconds: row[8],
                checksum: (row[9] as Int64?).map { UInt32(truncatingIfNeeded: $0) }
            )
        }
    }

    /// Inserts or replaces `key`'s row; returns the file of the value it replaced, if any.
    static func upsert(_ db: Database, key: String, entry: Entry) throws -> String? {
        let previous = try String.fetchOne(
            try db.cachedStatement(sql: "SELECT file FROM entry WHERE key = ?"),
            arguments: [key]
        )
        // An upsert, not INSERT OR REPLACE: REPLACE's implicit delete does not fire triggers.
        try db.cachedStatement(
            sql: """
                INSERT INTO entry (key, file, inline, size, created, modified, accessed, expires, tag, compute, checksum)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET file = excluded.file, inline = excluded.inline,
                    size = excluded.size, modified = excluded.modified, accessed = excluded.accessed,
                    expires = excluded.expires, tag = excluded.tag, compute = excluded.compute,
                    checksum = excluded.checksum
                """
        ).execute(arguments: [
            key, entry.file, entry.inline, entry.size, entry.created, entry.modified, entry.accessed, entry.expires,
            entry.tag, entry.computeSeconds, entry.checksum.map { Int64($0) },
        ])
        return previous
    }

    /// Bytes the value files take (estimated; see ``fileAllocation(_:)``), from the `totals` row.
    static func fileAllocated(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(try db.cachedStatement(sql: "SELECT file_allocated FROM totals WHERE id = 0")) ?? 0
    }

    /// Count and total size of the values, from the `totals` row.
    static func totals(_ db: Database) throws -> (count: Int, size: Int64) {
        let row = try Row.fetchOne(try db.cachedStatement(sql: "SELECT count, size FROM totals WHERE id = 0"))
        return (row?[0] ?? 0, row?[1] ?? 0)
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
                "DELETE FROM entry WHERE key IN (SELECT key FROM entry WHERE \(whereClause)\(limitClause)) RETURNING file",
            arguments: arguments
        )
        var removal = Removal()
        removal.count = rows.count
        removal.files = rows.compactMap { $0[0] as String? }
        return removal
    }

    /// Records buffered access times (only ever moving them forward).
    func recordAccesses(_ accesses: [String: Double]) throws {
        guard !accesses.isEmpty else { return }
        try write { db in
            let statement = try db.cachedStatement(
                sql: "UPDATE entry SET accessed = ?2 WHERE key = ?1 AND accessed < ?2"
            )
            for (key, time) in accesses {
                try statement.execute(arguments: [key, time])
            }
        }
    }
}
