import ArgumentParser
import GRDBSQLite
import NIOCore
import NIOHTTP1

/// Responses kept in an SQLite table, one row per URL, each read back with one indexed `SELECT`
/// per request (`--index-prefix`): the floor of answering a hit from a disk index that holds the
/// bytes to send, on this machine, for the proxy benchmark's many-URL case.
///
/// The table has the shape of the proxy's disk index (a rowid table with the key as its
/// `PRIMARY KEY`, WAL, `synchronous = NORMAL`, SQLite's default page cache, reads by `pread`
/// unless `--index-mmap-size` says otherwise) and holds each
/// captured response whole, head and body, so a hit is one statement step and one copy: no
/// decoding, no freshness, no second lookup. Each event loop reads through a connection of
/// its own, as the proxy's loops read its index without a lock between them.
final class IndexedResponses: @unchecked Sendable {
    // @unchecked: each connection and statement is used by one event loop only (`response(for:on:else:)`).
    private let readers: [ObjectIdentifier: Reader]
    private let prefix: String

    /// One connection and its prepared `SELECT`.
    private final class Reader {
        let connection: OpaquePointer
        let select: OpaquePointer

        init(path: String, mmapSize: Int) throws {
            var connection: OpaquePointer?
            guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let connection else {
                throw ValidationError("--index-file \(path): sqlite3_open_v2 failed")
            }
            self.connection = connection
            // `PRAGMA mmap_size`: pages read through a mapping instead of `pread` (0, SQLite's
            // default, as the proxy's index reads: a file truncated under a mapping raises SIGBUS).
            guard sqlite3_exec(connection, "PRAGMA mmap_size = \(mmapSize)", nil, nil, nil) == SQLITE_OK else {
                throw ValidationError("--index-file \(path): \(String(cString: sqlite3_errmsg(connection)))")
            }
            var select: OpaquePointer?
            guard
                sqlite3_prepare_v2(connection, "SELECT value FROM response WHERE key = ?", -1, &select, nil)
                    == SQLITE_OK, let select
            else {
                throw ValidationError("--index-file \(path): \(String(cString: sqlite3_errmsg(connection)))")
            }
            self.select = select
        }

        deinit {
            sqlite3_finalize(select)
            sqlite3_close_v2(connection)
        }

        /// The bytes stored for `key`, copied into a buffer; `nil` when there is no row.
        func response(forKey key: String) -> ByteBuffer? {
            defer { sqlite3_reset(select) }
            var key = key
            let status = key.withUTF8 { bytes in
                sqlite3_bind_text(select, 1, bytes.baseAddress, Int32(bytes.count), nil)
                return sqlite3_step(select)
            }
            guard status == SQLITE_ROW, let bytes = sqlite3_column_blob(select, 0) else { return nil }
            let count = Int(sqlite3_column_bytes(select, 0))
            return ByteBuffer(bytes: UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }

    /// Fills a new table at `path` with `count` rows, `prefix` followed by 0 to `count - 1`,
    /// each holding `response`'s bytes, and opens a reader for each of `loops`.
    init(
        path: String,
        prefix: String,
        count: Int,
        mmapSize: Int,
        response: CapturedResponse,
        loops: [any EventLoop]
    ) throws {
        guard count > 0 else { throw ValidationError("--index-count must be 1 or more, got \(count)") }
        guard mmapSize >= 0 else { throw ValidationError("--index-mmap-size must be 0 or more, got \(mmapSize)") }
        self.prefix = prefix
        try Self.fill(path: path, prefix: prefix, count: count, bytes: Array(response.bytes.readableBytesView))
        var readers: [ObjectIdentifier: Reader] = [:]
        for loop in loops { readers[ObjectIdentifier(loop)] = try Reader(path: path, mmapSize: mmapSize) }
        self.readers = readers
    }

    /// The bytes for `request` when its path is under the prefix, read through `loop`'s reader;
    /// `table`'s captured response otherwise.
    func response(for request: HTTPRequestHead, on loop: any EventLoop, else table: CapturedResponses) -> ByteBuffer? {
        let path = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard path.hasPrefix(prefix) else { return table.response(for: request.uri)?.bytes }
        return readers[ObjectIdentifier(loop)]?.response(forKey: String(path))
    }

    private static func fill(path: String, prefix: String, count: Int, bytes: [UInt8]) throws {
        var connection: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        guard sqlite3_open_v2(path, &connection, flags, nil) == SQLITE_OK, let connection else {
            throw ValidationError("--index-file \(path): sqlite3_open_v2 failed")
        }
        defer { sqlite3_close_v2(connection) }
        func execute(_ sql: String) throws {
            guard sqlite3_exec(connection, sql, nil, nil, nil) == SQLITE_OK else {
                throw ValidationError("--index-file \(path): \(sql): \(String(cString: sqlite3_errmsg(connection)))")
            }
        }
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = NORMAL")
        try execute("DROP TABLE IF EXISTS response")
        try execute("CREATE TABLE response (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL)")
        try execute("BEGIN")
        var insert: OpaquePointer?
        guard
            sqlite3_prepare_v2(connection, "INSERT INTO response (key, value) VALUES (?, ?)", -1, &insert, nil)
                == SQLITE_OK, let insert
        else { throw ValidationError("--index-file \(path): \(String(cString: sqlite3_errmsg(connection)))") }
        defer { sqlite3_finalize(insert) }
        for number in 0..<count {
            var key = prefix + String(number)
            let status = key.withUTF8 { keyBytes in
                bytes.withUnsafeBytes { valueBytes in
                    sqlite3_bind_text(insert, 1, keyBytes.baseAddress, Int32(keyBytes.count), nil)
                    sqlite3_bind_blob(insert, 2, valueBytes.baseAddress, Int32(valueBytes.count), nil)
                    return sqlite3_step(insert)
                }
            }
            sqlite3_reset(insert)
            guard status == SQLITE_DONE else {
                throw ValidationError("--index-file \(path): insert: \(String(cString: sqlite3_errmsg(connection)))")
            }
        }
        try execute("COMMIT")
        try execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}
