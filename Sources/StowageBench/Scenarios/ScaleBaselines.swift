import Foundation
import GRDBSQLite
import StowageCore

/// The floor of the scale bench: SQLite's C API doing the disk cache's work on a table with an
/// access-time index (WAL, `synchronous = NORMAL`, as Stowage's index), statements prepared once,
/// each write its own transaction. No checksums, totals, tags or expiry: what any SQLite-indexed
/// cache pays at least.
final class ScaleSQLiteFloor: @unchecked Sendable {
    private var connection: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    private let path: String
    /// The access time given to the next write, so that least-recently-used order is write order.
    private var clock = 0.0

    static let upsertSQL = "INSERT OR REPLACE INTO kv (key, value, accessed) VALUES (?, ?, ?)"
    static let selectSQL = "SELECT value FROM kv WHERE key = ?"
    static let deleteSQL = "DELETE FROM kv WHERE key = ?"
    static let trimSQL = "DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv ORDER BY accessed LIMIT 256)"

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appending(path: "kv.sqlite").path
        try open()
        try exec(
            """
            CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, accessed REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS kv_accessed ON kv(accessed)
            """
        )
        clock = try count() + 1
    }

    deinit { close() }

    /// Opens the file and prepares the statements: what `open` times.
    func open() throws {
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            throw BenchFailure("sqlite3_open_v2 \(path) failed")
        }
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        statements = [:]
    }

    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        sqlite3_close_v2(connection)
        connection = nil
    }

    private func exec(_ sql: String) throws {
        guard sqlite3_exec(connection, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchFailure("\(sql): \(String(cString: sqlite3_errmsg(connection)))")
        }
    }

    private func statement(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw BenchFailure("\(sql): \(String(cString: sqlite3_errmsg(connection)))")
        }
        statements[sql] = statement
        return statement
    }

    /// Prepares every statement the operations use (part of an open).
    func prepareAll() throws {
        for sql in [Self.upsertSQL, Self.selectSQL, Self.deleteSQL, Self.trimSQL] { _ = try statement(sql) }
    }

    private func count() throws -> Double {
        let select = try statement("SELECT COUNT(*) FROM kv")
        defer { sqlite3_reset(select) }
        return sqlite3_step(select) == SQLITE_ROW ? Double(sqlite3_column_int64(select, 0)) : 0
    }

    /// Writes `keys` in transactions of 10,000 (fixtures only).
    func fill(_ keys: some Sequence<String>, value: Data) throws {
        try exec("BEGIN")
        var inTransaction = 0
        for key in keys {
            try set(value, forKey: key)
            inTransaction += 1
            if inTransaction == 10_000 {
                try exec("COMMIT; BEGIN")
                inTransaction = 0
            }
        }
        try exec("COMMIT")
    }

    func set(_ value: Data, forKey key: String) throws {
        let upsert = try statement(Self.upsertSQL)
        defer { sqlite3_reset(upsert) }
        clock += 1
        var key = key
        let status = key.withUTF8 { keyBytes in
            value.withUnsafeBytes { valueBytes in
                sqlite3_bind_text(upsert, 1, keyBytes.baseAddress, Int32(keyBytes.count), nil)
                sqlite3_bind_blob(upsert, 2, valueBytes.baseAddress, Int32(valueBytes.count), nil)
                sqlite3_bind_double(upsert, 3, clock)
                return sqlite3_step(upsert)
            }
        }
        guard status == SQLITE_DONE else {
            throw BenchFailure("insert: \(String(cString: sqlite3_errmsg(connection)))")
        }
    }

    func get(_ key: String) throws -> Data? {
        let select = try statement(Self.selectSQL)
        defer { sqlite3_reset(select) }
        var key = key
        let status = key.withUTF8 { keyBytes in
            sqlite3_bind_text(select, 1, keyBytes.baseAddress, Int32(keyBytes.count), nil)
            return sqlite3_step(select)
        }
        guard status == SQLITE_ROW else { return nil }
        let count = Int(sqlite3_column_bytes(select, 0))
        guard count > 0, let bytes = sqlite3_column_blob(select, 0) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    @discardableResult
    func remove(_ key: String) throws -> Bool {
        let delete = try statement(Self.deleteSQL)
        defer { sqlite3_reset(delete) }
        var key = key
        let status = key.withUTF8 { keyBytes in
            sqlite3_bind_text(delete, 1, keyBytes.baseAddress, Int32(keyBytes.count), nil)
            return sqlite3_step(delete)
        }
        guard status == SQLITE_DONE else {
            throw BenchFailure("delete: \(String(cString: sqlite3_errmsg(connection)))")
        }
        return sqlite3_changes(connection) > 0
    }

    /// Removes the `count` least recently written rows, 256 per transaction.
    func trim(removing count: Int) throws {
        let trim = try statement(Self.trimSQL)
        var removed = 0
        while removed < count {
            defer { sqlite3_reset(trim) }
            guard sqlite3_step(trim) == SQLITE_DONE else {
                throw BenchFailure("trim: \(String(cString: sqlite3_errmsg(connection)))")
            }
            let changes = Int(sqlite3_changes(connection))
            if changes == 0 { break }
            removed += changes
        }
    }

    var rowCount: Int { get throws { Int(try count()) } }
}

/// python-diskcache 5.6.3 (`diskcache.Cache`, its defaults: SQLite in WAL, `synchronous =
/// NORMAL`, values under 32 KiB inline, `cull_limit` 10) doing the scale bench's operations in a
/// process of its own on the same volume, with the same keys and orders. `nil` when `import
/// diskcache` fails (`pip install diskcache==5.6.3`).
enum PythonDiskCacheScale {
    /// The operations at one size: µs per operation for `open`, `set`, `get`, `remove`, `usage`,
    /// seconds for `trim-half`; with `atLimit`, µs per set into a cache at its size limit and
    /// into the same cache below it.
    static func measure(directory: URL, size: Int, operations: Int, atLimit: Bool) -> [String: Double]? {
        let output = try? Subprocess.run([
            "python3", "-c", script, directory.fileSystemPath, "\(size)", "\(operations)",
            atLimit ? "at-limit" : "scale",
        ])
        guard let output, let data = output.split(separator: "\n").last.map({ Data($0.utf8) }) else { return nil }
        return try? JSONDecoder().decode([String: Double].self, from: data)
    }

    // Keys, value bytes and the pick order (j * 7919 + 13) % n are the Swift side's.
    static let script = """
        import json, sys, time
        try:
            import diskcache
        except ImportError:
            sys.exit(0)
        root, n, m, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        value = bytes((i * 131) & 0xff for i in range(1024))
        def key(i): return "https://example.com/assets/%d.bin" % i
        def fill(cache, count):
            for start in range(0, count, 10000):
                with cache.transact():
                    for i in range(start, min(count, start + 10000)): cache.set(key(i), value)
        def timed_sets(cache, first, count):
            start = time.perf_counter()
            for i in range(first, first + count): cache.set(key(i), value)
            return (time.perf_counter() - start) / count * 1e6
        unlimited = 2 ** 62
        out = {}
        if mode == "scale":
            cache = diskcache.Cache(root + "/scale", size_limit=unlimited)
            fill(cache, n)
            cache.close()
            opens = []
            for _ in range(9):
                start = time.perf_counter()
                cache = diskcache.Cache(root + "/scale", size_limit=unlimited)
                opens.append(time.perf_counter() - start)
                cache.close()
            out["open"] = sorted(opens)[len(opens) // 2] * 1e6
            cache = diskcache.Cache(root + "/scale", size_limit=unlimited)
            out["set"] = timed_sets(cache, n, m)
            start = time.perf_counter()
            for j in range(m):
                if cache.get(key((j * 7919 + 13) % n)) != value: sys.exit("diskcache read back a wrong value")
            out["get"] = (time.perf_counter() - start) / m * 1e6
            start = time.perf_counter()
            for j in range(m): del cache[key((j * 7919 + 17) % n)]
            out["remove"] = (time.perf_counter() - start) / m * 1e6
            start = time.perf_counter()
            for _ in range(1000): cache.volume()
            out["usage"] = (time.perf_counter() - start) / 1000 * 1e6
            before = len(cache)
            cache.reset("size_limit", cache.volume() // 2)
            start = time.perf_counter()
            cache.cull()
            out["trim-half"] = time.perf_counter() - start
            out["trim-half-removed"] = before - len(cache)
        else:
            below = diskcache.Cache(root + "/below", size_limit=unlimited)
            fill(below, n)
            out["below-limit"] = timed_sets(below, n, m)
            below.close()
            at = diskcache.Cache(root + "/at", size_limit=unlimited)
            fill(at, n)
            at.reset("size_limit", at.volume())
            out["at-limit"] = timed_sets(at, n, m)
            at.close()
        print(json.dumps(out))
        """
}
