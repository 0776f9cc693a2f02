import Foundation
import GRDB
import Logging
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    struct Removal: Sendable {
        var count = 0
        var files: [String] = []
        /// Bytes of the values removed.
        var bytes: Int64 = 0
    }

    /// A `DatabasePool` normally; a `DatabaseQueue` in exclusive locking mode when the index
    /// was opened on a full volume (``isOpenedOnFullVolume``).
    let pool: any DatabaseWriter
    let path: String
    /// The page cache every connection was given (``DiskCache/Configuration/indexPageCacheSize``);
    /// `nil` for SQLite's default. A trim's batches keep to it when set.
    let pageCacheSize: ByteCount?
    /// Whether the index was opened on a full volume: SQLite could not create its shared-memory
    /// file (`-shm`), so this process holds the index in exclusive locking mode, which keeps
    /// the WAL index in its own memory. Reads work; writes fail with `.noSpace` until space
    /// returns, then work again; other processes wait for the index until this one closes it.
    let isOpenedOnFullVolume: Bool
    /// The hot read's own connections; `nil` when ``isOpenedOnFullVolume``.
    let reader: DiskCacheReader?
    /// Checkpoints the WAL beside the writers; `nil` when ``isOpenedOnFullVolume``.
    let checkpointer: DiskCacheCheckpointer?

    /// The format this code writes, in SQLite's `user_version`. Format 1 (no version stored,
    /// user_version 0) lacked tags, compute times and the file-allocation total; format 2 the
    /// values' checksums. Both are migrated in place on open; their rows keep no checksum and
    /// are served unverified until they are rewritten. Format 3 lacked the file-size total
    /// (allocated-size accounting).
    static let formatVersion = 4

    /// Bytes a value file takes, estimated as its size rounded up to 4 KiB blocks (the block of
    /// ext4, XFS and APFS), kept in `totals.file_allocated` so reports need no scan.
    private static func fileAllocation(_ row: String) -> String {
        "CASE WHEN \(row).file IS NOT NULL THEN (\(row).size + 4095) / 4096 * 4096 ELSE 0 END"
    }

    /// The size of a value that is a file; 0 for an inline one.
    private static func fileSize(_ row: String) -> String {
        "CASE WHEN \(row).file IS NOT NULL THEN \(row).size ELSE 0 END"
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
            file_allocated INTEGER NOT NULL DEFAULT 0,
            file_size INTEGER NOT NULL DEFAULT 0
        );
        INSERT OR IGNORE INTO totals (id, count, size) VALUES (0, 0, 0);
        CREATE TRIGGER IF NOT EXISTS entry_inserted AFTER INSERT ON entry BEGIN
            UPDATE totals SET count = count + 1, size = size + NEW.size,
                file_allocated = file_allocated + \(fileAllocation("NEW")),
                file_size = file_size + \(fileSize("NEW")) WHERE id = 0;
        END;
        CREATE TRIGGER IF NOT EXISTS entry_deleted AFTER DELETE ON entry BEGIN
            UPDATE totals SET count = count - 1, size = size - OLD.size,
                file_allocated = file_allocated - \(fileAllocation("OLD")),
                file_size = file_size - \(fileSize("OLD")) WHERE id = 0;
        END;
        CREATE TRIGGER IF NOT EXISTS entry_changed AFTER UPDATE OF size, file ON entry BEGIN
            UPDATE totals SET size = size - OLD.size + NEW.size,
                file_allocated = file_allocated - \(fileAllocation("OLD")) + \(fileAllocation("NEW")),
                file_size = file_size - \(fileSize("OLD")) + \(fileSize("NEW")) WHERE id = 0;
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

    /// The pragmas every connection to the index runs first: `synchronous = FULL` for
    /// ``DiskCache/Durability/powerLoss``, `NORMAL` otherwise.
    ///
    /// On Apple platforms SQLite's `fsync` leaves the WAL in the drive's cache unless `fullfsync`
    /// (and `checkpoint_fullfsync` for checkpoints) makes it use `F_FULLFSYNC`, as the value files'
    /// flush does; SQLite ignores both pragmas elsewhere, so Linux runs only the first.
    /// `PRAGMA cache_size` for at most `size` of page cache per connection (SQLite's own default
    /// when `nil`); at least one KiB.
    static func pageCachePragma(_ size: ByteCount?) -> String? {
        size.map { "PRAGMA cache_size = -\(max(1, $0.rawValue / 1_024))" }
    }

    static func synchronousPragmas(_ synchronous: Bool) -> String {
        guard synchronous else { return "PRAGMA synchronous = NORMAL" }
        #if canImport(Darwin)
        return "PRAGMA synchronous = FULL; PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON"
        #else
        return "PRAGMA synchronous = FULL"
        #endif
    }

    /// Brings format 2 to format 3: the values' checksums (NULL for the rows already there).
    static let migrationFrom2 = "ALTER TABLE entry ADD COLUMN checksum INTEGER;"

    /// Brings format 3 to format 4: the file-size total, computed once, and triggers that keep it.
    static let migrationFrom3 = """
        ALTER TABLE totals ADD COLUMN file_size INTEGER NOT NULL DEFAULT 0;
        UPDATE totals SET file_size = (SELECT COALESCE(SUM(\(fileSize("entry"))), 0) FROM entry) WHERE id = 0;
        DROP TRIGGER IF EXISTS entry_inserted;
        DROP TRIGGER IF EXISTS entry_deleted;
        DROP TRIGGER IF EXISTS entry_changed;
        """

    /// Opens (creating if needed) the index at `path`.
    ///
    /// - Throws: GRDB's `DatabaseError` as SQLite reports it (`SQLITE_NOTADB`,
    ///   `SQLITE_CORRUPT` for a damaged file); the caller decides about recovery.
    ///   A newer format than ``formatVersion`` is `StowageError` `.unsupported`, never a misread.
    init(path: String, synchronous: Bool, pageCacheSize: ByteCount? = nil, logger: Logger) throws {
        let pageCachePragma = Self.pageCachePragma(pageCacheSize)
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(30)
        configuration.label = "stowage.disk-cache"
        configuration.prepareDatabase { db in
            try db.execute(sql: Self.synchronousPragmas(synchronous))
            if let pageCachePragma { try db.execute(sql: pageCachePragma) }
            // The maintenance lane checkpoints (DiskCacheCheckpointer); this only bounds the WAL
            // should it fall behind.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(DiskCacheCheckpointer.fallbackPages)")
            // A log that grew while a long read held its snapshot (the maintenance lane's
            // whole-file check at a million entries) is cut back to this when it next starts
            // over, instead of keeping its largest size on disk until the cache closes.
            try db.execute(sql: "PRAGMA journal_size_limit = \(DiskCacheCheckpointer.fallbackPages * 4_120)")
            if !db.configuration.readonly { try Self.startWAL(db, path: path, synchronous: synchronous) }
        }
        self.path = path
        self.pageCacheSize = pageCacheSize
        if Self.needsPrivateWALIndex(path: path) {
            // No room for the -shm file: keep the WAL index in this process's memory instead. A
            // -shm file an earlier attempt could not size would be taken for a lock held by
            // someone; under the cache's open lock nobody else is opening, and every process that
            // has the index open uses a full-sized one (≥ 32 KiB), so a smaller one is removed.
            FileNames.remove(path + "-shm")
            // A configuration of its own: prepareDatabase adds to the setups, and locking_mode
            // must come before any statement that touches the WAL.
            var exclusive = GRDB.Configuration()
            exclusive.busyMode = .timeout(30)
            exclusive.label = "stowage.disk-cache"
            exclusive.prepareDatabase { db in
                try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
                try db.execute(sql: Self.synchronousPragmas(synchronous))
                if let pageCachePragma { try db.execute(sql: pageCachePragma) }
            }
            let queue = try DatabaseQueue(path: path, configuration: exclusive)
            try Self.prepare(queue, path: path, logger: logger)
            pool = queue
            isOpenedOnFullVolume = true
            reader = nil
            checkpointer = nil
            logger.warning(
                """
                disk cache index opened on a full volume: reads are served, writes fail until space returns, \
                and other processes wait for the index until this one closes it
                """,
                metadata: ["path": "\(path)"]
            )
        } else {
            let pool = try DatabasePool(path: path, configuration: configuration)
            if synchronous {
                // GRDB's pool sets `synchronous = NORMAL` on its writer after prepareDatabase has
                // run (`Database.setUpWALMode`), so .powerLoss's FULL is set again here: without
                // it a commit returned before its WAL frames were synced.
                try pool.writeWithoutTransaction { db in try db.execute(sql: Self.synchronousPragmas(true)) }
            }
            try Self.prepare(pool, path: path, logger: logger)
            self.pool = pool
            isOpenedOnFullVolume = false
            reader = DiskCacheReader(path: path, pageCachePragma: pageCachePragma)
            checkpointer = DiskCacheCheckpointer(path: path, synchronous: synchronous, pageCachePragma: pageCachePragma)
        }
    }

    /// Starts the write-ahead log, on the writer's connection, when its file is missing or empty
    /// (SQLite removes it when the last connection closes): one commit that changes nothing
    /// (`user_version` written back), with `synchronous = OFF`.
    ///
    /// GRDB's pool would start it otherwise (`Database.setUpWALMode`, GRDB issue 102: readers
    /// need the file) with a schema change at `synchronous = NORMAL`, and SQLite syncs the first
    /// commit into a new log: an `fdatasync` of its header and one of the directory, 1–12 ms of
    /// every open of a closed cache on the loaded development machine, at any size (`strace`
    /// of the sqlite3 shell: 9.0 ms and 3.6 ms). This commit has nothing to make durable; SQLite
    /// syncs the log and its directory at the next commit that syncs (`.powerLoss`) or the next
    /// checkpoint, as it would have.
    static func startWAL(_ db: Database, path: String, synchronous: Bool) throws {
        if let status = FileStatus.of(path + "-wal"), status.size > 0 { return }
        guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else { return }
        try db.execute(sql: "PRAGMA synchronous = OFF")
        do {
            try db.inTransaction(.immediate) {
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                try db.execute(sql: "PRAGMA user_version = \(version)")
                return .commit
            }
        } catch {
            try? db.execute(sql: synchronousPragmas(synchronous))
            throw error
        }
        try db.execute(sql: synchronousPragmas(synchronous))
    }

    /// Brings the file to the current format (writing only when it is not there yet, so an
    /// index on a full volume opens), then reads it once to check it is a sound database.
    private static func prepare(_ writer: some DatabaseWriter, path: String, logger: Logger) throws {
        let version = try writer.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        if version != formatVersion {
            do {
                try writer.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        try Self.prepareFormat(db, path: path, logger: logger)
                        return .commit
                    }
                }
            } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_ERROR {
                // A migration that does not fit the tables (a `user_version` reset to 0 under
                // tables of a later format: "duplicate column name") is damage, not a bug.
                throw DatabaseError(
                    resultCode: .SQLITE_CORRUPT,
                    message: "format \(version) does not match the tables: \(error.message ?? "\(error)")"
                )
            }
        }
        // A dropped table, column or trigger fails every query after: checked here, on the few
        // pages of the schema. Damage elsewhere in the file is the maintenance lane's
        // `quick_check` (it reads every page: seconds at a million entries) or is met by a query;
        // either way the corrupt-index policy decides (`DiskCache+Integrity.swift`).
        if let damage = try writer.read(Self.schemaDamage) {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: damage)
        }
        try addFileIndexIfMissing(writer)
    }

    /// The index of the rows whose value is a file, which orphan collection reads at every open:
    /// without it that read scans the whole table (every inline value). An index older Stowage
    /// versions do not know is harmless to them, so it needs no new format; created once, here,
    /// and skipped on a full volume (the read then scans, as before).
    private static func addFileIndexIfMissing(_ writer: some DatabaseWriter) throws {
        let present = try writer.read { db in
            try Bool.fetchOne(db, sql: "SELECT COUNT(*) > 0 FROM sqlite_master WHERE name = 'entry_file'") ?? false
        }
        guard !present else { return }
        do {
            try writer.writeWithoutTransaction { db in try db.execute(sql: fileIndex) }
        } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_FULL {
            return
        }
    }

    static let fileIndex = "CREATE INDEX IF NOT EXISTS entry_file ON entry(file) WHERE file IS NOT NULL"

    /// What SQLite's `quick_check` finds wrong with the file (every page read, no index compared
    /// with its table), or `nil` when it finds nothing.
    static func quickCheck(_ db: Database) throws -> String? {
        let verdict = try String.fetchAll(db, sql: "PRAGMA quick_check(1)")
        return verdict == ["ok"] ? nil : "quick_check: \(verdict.first ?? "no answer")"
    }

    /// Empties a damaged index in place and gives it the current schema, through connections
    /// already open on it: SQLite's backup API copies an empty database of the same page size
    /// over every page (it never reads the damaged b-trees, and keeps WAL mode), and the other
    /// connections see a new schema on their next statement.
    static func reset(_ writer: any DatabaseWriter) throws {
        let pageSize = try writer.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } ?? 4096
        let empty = try DatabaseQueue()
        try empty.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try db.execute(sql: schema)
            try db.execute(sql: fileIndex)
            try db.execute(sql: "PRAGMA user_version = \(formatVersion)")
        }
        try writer.writeWithoutTransaction { destination in
            try empty.inDatabase { source in try source.backup(to: destination) }
            destination.clearSchemaCache()
        }
    }

    /// Columns of each table of the current format.
    static let requiredColumns: [(table: String, columns: Set<String>)] = [
        (
            "entry",
            [
                "key", "file", "inline", "size", "created", "modified", "accessed", "expires", "tag", "compute",
                "checksum",
            ]
        ),
        ("totals", ["id", "count", "size", "file_allocated", "file_size"]),
    ]

    /// Triggers that keep `totals`.
    static let requiredTriggers: Set<String> = ["entry_inserted", "entry_deleted", "entry_changed"]

    /// What the schema lacks against the current format (a table, a column, a trigger or the
    /// `totals` row), or `nil` when it is whole.
    static func schemaDamage(_ db: Database) throws -> String? {
        for (table, columns) in requiredColumns {
            guard try db.tableExists(table) else { return "no table \(table)" }
            let present = Set(try db.columns(in: table).map(\.name))
            if let missing = columns.subtracting(present).sorted().first {
                return "table \(table) has no column \(missing)"
            }
        }
        let triggers = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'"))
        if let missing = requiredTriggers.subtracting(triggers).sorted().first { return "no trigger \(missing)" }
        if try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM totals WHERE id = 0") != 1 { return "no totals row" }
        return nil
    }

    /// Whether the index must keep its WAL index in private memory: the volume has no room for
    /// the 32 KiB shared-memory file (`-shm`) SQLite needs, and no usable one exists.
    static func needsPrivateWALIndex(path: String) -> Bool {
        if let status = FileStatus.of(path + "-shm"), status.size >= 32 * 1024 { return false }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        guard let capacity = try? VolumeCapacity.forVolume(containing: URL(filePath: directory)) else {
            return false
        }
        return capacity.available.rawValue < 64 * 1024
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
            if version < 3 { try db.execute(sql: migrationFrom2) }
            try db.execute(sql: migrationFrom3)
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

    /// A write transaction for a batch of a trim, as ``write(_:)`` is, on a connection whose
    /// statement journals stay in memory (`temp_store = MEMORY`) and whose page cache holds
    /// ``evictionCacheSize`` for the batch (unless the index was opened with a page cache size of
    /// its own, which it keeps); both are put back when it ends.
    ///
    /// A `DELETE` that fires the totals trigger may fail half-way, so SQLite journals each page it
    /// changes for the statement, and past 64 KiB (16 or so rows of 1 KiB) writes that journal to
    /// a temporary file: for a batch of 1,024 rows, several megabytes of file writes and the
    /// kernel's write-back of them, beside the WAL's own. In memory it is a few megabytes, freed
    /// when the statement ends. `temp_store` can change only outside a transaction, and the
    /// statements that delete rows without a limit (`removeAll(tagged:)`) keep the default.
    func evictionWrite<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            let cacheSize = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2_000
            // A page cache the owner set (an HTTPCache's 256 KiB) is a memory bound it chose:
            // the batch keeps to it and reads pages again instead.
            let batchCacheSize = pageCacheSize == nil ? Self.evictionCacheSize : cacheSize
            let restore = "PRAGMA temp_store = DEFAULT; PRAGMA cache_size = \(cacheSize)"
            try db.execute(sql: "PRAGMA temp_store = MEMORY; PRAGMA cache_size = \(batchCacheSize)")
            let result: T
            do {
                var value: T?
                try db.inTransaction(.immediate) {
                    value = try body(db)
                    return .commit
                }
                result = value!
            } catch {
                try? db.execute(sql: restore)
                throw error
            }
            try db.execute(sql: restore)
            return result
        }
    }

    /// The writer's page cache during a trim's batch (``evictionWrite(_:)``), in SQLite's
    /// `cache_size` units (negative: KiB): 32 MiB, python-diskcache's `sqlite_cache_size` of
    /// 8,192 pages. A batch reads its rows twice (the candidates, then the `DELETE`) and
    /// changes a page of the table for every row or so, with the index pages beside them:
    /// more than SQLite's default 2 MB holds, so pages were read again from the file (one
    /// `pread` each). With it, trimming 102,400 of the bench's 10^6 rows (batches of 1,024, on a
    /// copy of the bench's index) in the sqlite3 shell made 111,924 `pread`s and 212,334
    /// `pwrite`s instead of 317,545 and 265,476 (`strace -c`). Shrinking the cache back after the
    /// batch frees the pages.
    static let evictionCacheSize = -32_768

    /// The row for `key` through the prepared ``reader``, failing with `SQLITE_BUSY` rather than
    /// waiting on a lock another connection holds; `nil` without a reader (exclusive locking
    /// mode, where reads go through GRDB's queue behind writes) as for a missing row.
    func entryWithoutWaiting(forKey key: String) throws -> Entry? {
        try reader?.entry(forKey: key, waits: false)
    }

    /// The row for `key`: through the prepared ``reader`` normally, through GRDB when the index is
    /// held in exclusive locking mode (no other connection may read it then).
    func entry(forKey key: String) throws -> Entry? {
        if let reader { return try reader.entry(forKey: key) }
        // One SELECT is atomic by itself: skipping GRDB's BEGIN/COMMIT around it halves a read.
        return try pool.unsafeRead { db in
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

    /// Count and total size of the values, from the `totals` row: through the prepared
    /// ``reader`` normally, through GRDB when the index is held in exclusive locking mode.
    func totals() throws -> (count: Int, size: Int64) {
        if let reader { return try reader.totals() }
        // One SELECT of one row is atomic by itself: no BEGIN/COMMIT around it.
        return try pool.unsafeRead { db in try Self.totals(db) }
    }

    /// Inserts or replaces `key`'s row; returns the file of the value it replaced, if any, and
    /// never `entry`'s own: a write committed twice (a batch retried write by write after a
    /// failure its first commit survived) replaces its own row, and the caller removes the file
    /// it is given.
    ///
    /// The hot write: GRDB's cached statements, bound and stepped through SQLite's C API
    /// (``RawStatement``), which costs a fraction of `Statement.execute(arguments:)`.
    static func upsert(_ db: Database, key: String, entry: Entry) throws -> String? {
        let select = try RawStatement(db, sql: "SELECT file FROM entry WHERE key = ?")
        // An upsert, not INSERT OR REPLACE: REPLACE's implicit delete does not fire triggers.
        let insert = try RawStatement(
            db,
            sql: """
                INSERT INTO entry (key, file, inline, size, created, modified, accessed, expires, tag, compute, checksum)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET file = excluded.file, inline = excluded.inline,
                    size = excluded.size, modified = excluded.modified, accessed = excluded.accessed,
                    expires = excluded.expires, tag = excluded.tag, compute = excluded.compute,
                    checksum = excluded.checksum
                """
        )
        var key = key
        return try key.withUTF8 { keyBytes in
            let previous = try select.run { statement in
                statement.bind(1, keyBytes)
                return try statement.step() ? statement.text(0) : nil
            }
            try insert.run { statement in
                statement.bind(1, keyBytes)
                statement.bind(2, entry.file)
                statement.bind(4, entry.size)
                statement.bind(5, entry.created)
                statement.bind(6, entry.modified)
                statement.bind(7, entry.accessed)
                statement.bind(8, entry.expires)
                statement.bind(9, entry.tag)
                statement.bind(10, entry.computeSeconds)
                statement.bind(11, entry.checksum.map { Int64($0) })
                try statement.withBlob(3, entry.inline) { _ = try statement.step() }
            }
            return previous == entry.file ? nil : previous
        }
    }

    /// Bytes the value files take (estimated; see ``fileAllocation(_:)``), from the `totals` row.
    static func fileAllocated(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(try db.cachedStatement(sql: "SELECT file_allocated FROM totals WHERE id = 0")) ?? 0
    }

    /// The totals of the entries, counted (one scan), as the `totals` row records them.
    private static func countedTotals(
        _ db: Database
    ) throws -> (count: Int, size: Int64, allocated: Int64, fileSize: Int64) {
        let actual = try Row.fetchOne(
            db,
            sql: """
                SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(SUM(\(fileAllocation("entry"))), 0),
                    COALESCE(SUM(\(fileSize("entry"))), 0) FROM entry
                """
        )!
        return (actual[0], actual[1], actual[2], actual[3])
    }

    /// Whether the `totals` row disagrees with the entries (one scan; no write lock needed).
    static func totalsDisagree(_ db: Database) throws -> Bool {
        let counted = try countedTotals(db)
        let recorded = try Row.fetchOne(
            db,
            sql: "SELECT count, size, file_allocated, file_size FROM totals WHERE id = 0"
        )
        guard let recorded else { return true }
        return (recorded[0] as Int, recorded[1] as Int64, recorded[2] as Int64, recorded[3] as Int64) != counted
    }

    /// Recomputes the `totals` row from the entries (one scan) and rewrites it when it
    /// disagrees; returns the true totals and whether the row was wrong.
    static func repairTotals(_ db: Database) throws -> (totals: (count: Int, size: Int64), wasWrong: Bool) {
        let wasWrong = try totalsDisagree(db)
        let counted = try countedTotals(db)
        if wasWrong {
            try db.execute(
                sql:
                    "INSERT OR REPLACE INTO totals (id, count, size, file_allocated, file_size) VALUES (0, ?, ?, ?, ?)",
                arguments: [counted.count, counted.size, counted.allocated, counted.fileSize]
            )
        }
        return ((counted.count, counted.size), wasWrong)
    }

    /// Count and total size of the values, from the `totals` row.
    static func totals(_ db: Database) throws -> (count: Int, size: Int64) {
        try RawStatement(db, sql: "SELECT count, size FROM totals WHERE id = 0").run { statement in
            try statement.step() ? (Int(statement.int64(0)), statement.int64(1)) : (0, 0)
        }
    }

    /// Count and total size of the values as `accounting` counts them, from the `totals` row.
    static func totals(_ db: Database, accounting: DiskCache.SizeAccounting) throws -> (count: Int, size: Int64) {
        switch accounting {
        case .logical:
            return try totals(db)
        case .allocated:
            // Inline values count their bytes (they share the index's pages); files their blocks.
            return try RawStatement(db, sql: "SELECT count, size - file_size + file_allocated FROM totals WHERE id = 0")
                .run { statement in try statement.step() ? (Int(statement.int64(0)), statement.int64(1)) : (0, 0) }
        }
    }

    /// What one value counts for under `accounting`: see ``totals(_:accounting:)``.
    static func accountedSize(_ size: Int64, isFile: Bool, accounting: DiskCache.SizeAccounting) -> Int64 {
        accounting == .allocated && isFile ? (size + 4095) / 4096 * 4096 : size
    }

    /// Records buffered access times (only ever moving them forward).
    func recordAccesses(_ accesses: [String: Double]) throws {
        guard !accesses.isEmpty else { return }
        try write { db in try Self.recordAccesses(db, accesses) }
    }

    /// Records buffered access times inside the caller's transaction.
    static func recordAccesses(_ db: Database, _ accesses: [String: Double]) throws {
        let statement = try db.cachedStatement(sql: "UPDATE entry SET accessed = ?2 WHERE key = ?1 AND accessed < ?2")
        for (key, time) in accesses {
            try statement.execute(arguments: [key, time])
        }
    }
}
