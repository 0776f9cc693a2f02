import Foundation
import GRDB
import GRDBSQLite
import StowageCache
import StowageCore

/// What each contender offers the scenario.
protocol BenchStore: Sendable {
    init(directory: URL) throws
    func set(_ value: Data, forKey key: String) throws
    func get(_ key: String) throws -> Data?
    /// Ends the store's life once its timings are taken; nothing to do for most contenders.
    func close() throws
}

extension BenchStore {
    func close() throws {}
}

/// Stowage's disk cache, limits off so the bench measures writes and reads only.
struct StowageStore: BenchStore {
    let cache: DiskCache
    init(directory: URL) throws {
        var configuration = DiskCache.Configuration(name: "bench")
        configuration.sizeLimit = nil
        cache = try DiskCache(directory: directory, configuration: configuration)
    }
    func set(_ value: Data, forKey key: String) throws { try cache.setData(value, forKey: key) }
    func get(_ key: String) throws -> Data? { try cache.data(forKey: key) }
    func close() throws { try cache.close() }
}

/// One file per key through Foundation, names from the key's hash as SDImageCache does.
struct FileStore: BenchStore {
    let directory: URL
    init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    private func url(_ key: String) -> URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return directory.appending(path: String(hash, radix: 16))
    }
    func set(_ value: Data, forKey key: String) throws { try value.write(to: url(key), options: .atomic) }
    func get(_ key: String) throws -> Data? { try? Data(contentsOf: url(key)) }
}

/// A plain key-value table in GRDB.
struct SQLiteStore: BenchStore {
    let pool: DatabasePool
    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = GRDB.Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        pool = try DatabasePool(path: directory.appending(path: "kv.sqlite").path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL)")
        }
    }
    func set(_ value: Data, forKey key: String) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }
    func get(_ key: String) throws -> Data? {
        try pool.read { db in try Data.fetchOne(db, sql: "SELECT value FROM kv WHERE key = ?", arguments: [key]) }
    }
}

/// The floor of an SQLite index: SQLite's C API with one connection in WAL mode
/// (`synchronous = NORMAL`, as Stowage's index) and one prepared statement per operation, kept
/// for the whole run: `sqlite3_step` and a copy of the blob, nothing else.
final class SQLiteCStore: BenchStore, @unchecked Sendable {
    private let connection: OpaquePointer
    private let select: OpaquePointer
    private let upsert: OpaquePointer

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var connection: OpaquePointer?
        let path = directory.appending(path: "kv.sqlite").path
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK,
            let connection
        else { throw BenchFailure("sqlite3_open_v2 \(path) failed") }
        self.connection = connection
        for sql in [
            "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL",
            "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL)",
        ] {
            guard sqlite3_exec(connection, sql, nil, nil, nil) == SQLITE_OK else {
                throw BenchFailure("\(sql): \(String(cString: sqlite3_errmsg(connection)))")
            }
        }
        func prepare(_ sql: String) throws -> OpaquePointer {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw BenchFailure("\(sql): \(String(cString: sqlite3_errmsg(connection)))")
            }
            return statement
        }
        select = try prepare("SELECT value FROM kv WHERE key = ?")
        upsert = try prepare("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)")
    }

    deinit {
        sqlite3_finalize(select)
        sqlite3_finalize(upsert)
        sqlite3_close_v2(connection)
    }

    func set(_ value: Data, forKey key: String) throws {
        defer { sqlite3_reset(upsert) }
        var key = key
        let status = key.withUTF8 { keyBytes in
            value.withUnsafeBytes { valueBytes in
                sqlite3_bind_text(upsert, 1, keyBytes.baseAddress, Int32(keyBytes.count), nil)
                sqlite3_bind_blob(upsert, 2, valueBytes.baseAddress, Int32(valueBytes.count), nil)
                return sqlite3_step(upsert)
            }
        }
        guard status == SQLITE_DONE else {
            throw BenchFailure("insert: \(String(cString: sqlite3_errmsg(connection)))")
        }
    }

    func get(_ key: String) throws -> Data? {
        defer { sqlite3_reset(select) }
        var key = key
        let status = key.withUTF8 { keyBytes in
            sqlite3_bind_text(select, 1, keyBytes.baseAddress, Int32(keyBytes.count), nil)
            return sqlite3_step(select)
        }
        switch status {
        case SQLITE_ROW:
            let count = Int(sqlite3_column_bytes(select, 0))
            guard count > 0, let bytes = sqlite3_column_blob(select, 0) else { return Data() }
            return Data(bytes: bytes, count: count)
        case SQLITE_DONE: return nil
        default: throw BenchFailure("select: \(String(cString: sqlite3_errmsg(connection)))")
        }
    }
}

/// python-diskcache (`diskcache.Cache`, its defaults: SQLite in WAL, `synchronous = NORMAL`,
/// values under 32 KiB inline), the Python peer the issue measured, timed by its own process
/// on the same volume. Skipped (nil) when `python3 -c 'import diskcache'` fails; CI does not
/// install it (`pip install diskcache==5.6.3` to include it).
enum PythonDiskCache {
    /// Microseconds per operation: the median of `repetitions` runs over `keyCount` keys.
    static func microsecondsPerOperation(
        setting: Bool,
        keyCount: Int,
        valueSize: Int,
        repetitions: Int,
        directory: URL
    ) -> Double? {
        let script = """
            import sys, time
            try:
                import diskcache
            except ImportError:
                print("unavailable"); sys.exit(0)
            root, setting, keys, size, reps = sys.argv[1], sys.argv[2] == "set", int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
            value = bytes((i * 131) & 0xff for i in range(size))
            names = ["https://example.com/assets/%d.bin" % i for i in range(keys)]
            times = []
            if not setting:
                cache = diskcache.Cache(root + "/get")
                for k in names: cache.set(k, value)
            for r in range(reps):
                if setting: cache = diskcache.Cache(root + "/set-%d" % r)
                start = time.perf_counter()
                if setting:
                    for k in names: cache.set(k, value)
                else:
                    for k in names:
                        if cache.get(k) != value: sys.exit("diskcache read back a wrong value")
                times.append(time.perf_counter() - start)
            times.sort()
            print(times[len(times) // 2] / keys * 1e6)
            """
        let output = try? Subprocess.run([
            "python3", "-c", script, directory.fileSystemPath, setting ? "set" : "get", "\(keyCount)", "\(valueSize)",
            "\(repetitions)",
        ])
        return output.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

extension ScenarioResult {
    /// A disk-cache scenario's result in µs per operation: each contender's median time (in
    /// seconds, over `keyCount` operations), with python-diskcache's figure (`nil`: not run).
    static func diskCache(
        name: String,
        seconds times: [String: [Double]],
        keyCount: Int,
        pythonDiskCache: Double?,
        ok: Bool,
        notes: String
    ) -> ScenarioResult {
        var perOperation = times.mapValues { median($0) / Double(keyCount) * 1e6 }
        perOperation["python-diskcache"] = pythonDiskCache
        return ScenarioResult(
            name: name,
            unit: "us/op",
            stowage: perOperation["stowage"]!,
            baselines: perOperation.filter { $0.key != "stowage" },
            ok: ok,
            notes: notes
        )
    }
}
