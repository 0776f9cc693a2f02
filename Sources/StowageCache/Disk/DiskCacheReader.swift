import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The disk cache's hot read: raw SQLite connections to the index, each with the entry lookup
/// prepared once, checked out one per read.
///
/// A read through GRDB's `DatabasePool` costs ~20 µs on this project's bench machine, most of
/// it outside SQLite: the reader checkout through a dispatch queue, the statement cache keyed by
/// the SQL text, the `Row` built per fetch (see the cache design article). Here a read is a mutex pop,
/// `sqlite3_bind_text`, `sqlite3_step`, one copy of the value's bytes, `sqlite3_reset` and a
/// mutex push. GRDB still owns the schema, migrations, writes and every other query; these
/// connections only read (`PRAGMA query_only`), and SQLite's WAL gives each step a consistent
/// snapshot, so a lookup needs no explicit transaction.
final class DiskCacheReader: Sendable {
    private let path: String
    /// The index's `cache_size`, when it sets one.
    private let pageCachePragma: String?
    private let idle = Mutex<[ReadConnection]>([])
    /// Connections kept open between reads; more are opened when more threads read at once.
    private static let idleLimit = 16

    init(path: String, pageCachePragma: String? = nil) {
        self.path = path
        self.pageCachePragma = pageCachePragma
    }

    /// The row for `key`, or `nil`.
    ///
    /// - Parameter waits: Whether the read may wait, up to ``ReadConnection/busyTimeout``, while
    ///   another connection holds the log's locks (recovering the WAL after a crash, possibly in
    ///   another process). `false` for a caller that must not block — an event loop: the read then
    ///   fails at once with `SQLITE_BUSY`, for the caller's ordinary read to wait out.
    /// - Throws: GRDB's `DatabaseError` with SQLite's code and message.
    func entry(forKey key: String, waits: Bool = true) throws -> DiskCacheIndex.Entry? {
        try withConnection(waits: waits) { try $0.entry(forKey: key, waits: waits) }
    }

    /// Count and total size of the values, from the `totals` row: what `DiskCache.usage()` reads,
    /// without GRDB's reader checkout (about as long again as the read itself).
    func totals() throws -> (count: Int, size: Int64) {
        try withConnection { try $0.totals() }
    }

    private func withConnection<T>(waits: Bool = true, _ body: (ReadConnection) throws -> T) throws -> T {
        let connection =
            try idle.withLock { $0.popLast() }
            ?? ReadConnection(path: path, pageCachePragma: pageCachePragma, waits: waits)
        let result: T
        do {
            result = try body(connection)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            // A lock another connection holds, not a broken connection: kept, since opening one
            // reads the schema, which would meet the same lock.
            putBack(connection)
            throw error
        }
        // On another error the connection is not put back: it is closed, and the next read opens another.
        putBack(connection)
        return result
    }

    private func putBack(_ connection: ReadConnection) {
        idle.withLock { connections in
            if connections.count < Self.idleLimit { connections.append(connection) }
        }
    }

    /// A connection's `cache_size` (SQLite's: negative in KiB, positive in pages).
    func pageCacheSize() throws -> Int {
        try withConnection { try $0.pageCacheSize() }
    }

    /// Closes the idle connections (they reopen on the next read).
    func closeIdleConnections() {
        idle.withLock { $0.removeAll() }
    }
}

/// One raw read-only connection and its prepared lookup. Used by one thread at a time: a
/// connection is either in ``DiskCacheReader``'s idle list or checked out by one reader.
private final class ReadConnection: @unchecked Sendable {
    private let connection: OpaquePointer
    private let lookup: OpaquePointer
    /// The `totals` read, prepared on first use.
    private var totalsRead: OpaquePointer?

    /// How long a read waits while another connection holds the log's locks: a WAL recovery
    /// after a crash, which reads the whole log.
    static let busyTimeout: Int32 = 30_000

    /// - Parameter waits: `false` opens the connection without waiting on the log's locks
    ///   (preparing the lookup reads the schema); it waits like any other from then on.
    init(path: String, pageCachePragma: String?, waits: Bool = true) throws {
        var connection: OpaquePointer?
        // Opened later than the cache's own connections: NOFOLLOW keeps an index swapped for a
        // symlink since then from being followed out of the cache's directory.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        var status = sqlite3_open_v2(path, &connection, flags, nil)
        guard status == SQLITE_OK, let connection else {
            let error = Self.error(status, connection)
            sqlite3_close_v2(connection)
            throw error
        }
        sqlite3_extended_result_codes(connection, 1)
        // Readers wait only while another connection recovers the WAL after a crash.
        sqlite3_busy_timeout(connection, waits ? Self.busyTimeout : 0)
        status = sqlite3_exec(connection, "PRAGMA query_only = 1", nil, nil, nil)
        if status == SQLITE_OK, let pageCachePragma {
            status = sqlite3_exec(connection, pageCachePragma, nil, nil, nil)
        }
        var lookup: OpaquePointer?
        if status == SQLITE_OK {
            status = sqlite3_prepare_v3(
                connection,
                """
                SELECT file, inline, size, created, modified, accessed, expires, tag, compute, checksum
                FROM entry WHERE key = ?
                """,
                -1,
                UInt32(SQLITE_PREPARE_PERSISTENT),
                &lookup,
                nil
            )
        }
        guard status == SQLITE_OK, let lookup else {
            let error = Self.error(status, connection)
            sqlite3_close_v2(connection)
            throw error
        }
        if !waits { sqlite3_busy_timeout(connection, Self.busyTimeout) }
        self.connection = connection
        self.lookup = lookup
    }

    deinit {
        sqlite3_finalize(lookup)
        sqlite3_finalize(totalsRead)
        sqlite3_close_v2(connection)
    }

    func totals() throws -> (count: Int, size: Int64) {
        if totalsRead == nil {
            let status = sqlite3_prepare_v3(
                connection,
                "SELECT count, size FROM totals WHERE id = 0",
                -1,
                UInt32(SQLITE_PREPARE_PERSISTENT),
                &totalsRead,
                nil
            )
            guard status == SQLITE_OK else { throw Self.error(status, connection) }
        }
        guard let totalsRead else { return (0, 0) }
        defer { sqlite3_reset(totalsRead) }
        switch sqlite3_step(totalsRead) {
        case SQLITE_ROW: return (Int(sqlite3_column_int64(totalsRead, 0)), sqlite3_column_int64(totalsRead, 1))
        case SQLITE_DONE: return (0, 0)
        case let status: throw Self.error(status, connection)
        }
    }

    func pageCacheSize() throws -> Int {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(connection, "PRAGMA cache_size", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard status == SQLITE_OK, let statement else { throw Self.error(status, connection) }
        let step = sqlite3_step(statement)
        guard step == SQLITE_ROW else { throw Self.error(step, connection) }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// The row for `key`; with `waits` false, `SQLITE_BUSY` at once where the read would wait.
    func entry(forKey key: String, waits: Bool) throws -> DiskCacheIndex.Entry? {
        guard !waits else { return try entry(forKey: key) }
        sqlite3_busy_timeout(connection, 0)  // no busy handler: SQLITE_BUSY at once
        defer { sqlite3_busy_timeout(connection, Self.busyTimeout) }
        return try entry(forKey: key)
    }

    func entry(forKey key: String) throws -> DiskCacheIndex.Entry? {
        defer {
            sqlite3_reset(lookup)
            sqlite3_clear_bindings(lookup)
        }
        var key = key
        let status = key.withUTF8 { utf8 in
            // SQLITE_STATIC (nil): the bytes outlive the step, which ends before this closure does.
            let bound = sqlite3_bind_text(lookup, 1, utf8.baseAddress, Int32(utf8.count), nil)
            return bound == SQLITE_OK ? sqlite3_step(lookup) : bound
        }
        switch status {
        case SQLITE_DONE:
            return nil
        case SQLITE_ROW:
            return DiskCacheIndex.Entry(
                file: text(0),
                inline: blob(1),
                size: sqlite3_column_int64(lookup, 2),
                created: sqlite3_column_double(lookup, 3),
                modified: sqlite3_column_double(lookup, 4),
                accessed: sqlite3_column_double(lookup, 5),
                expires: isNull(6) ? nil : sqlite3_column_double(lookup, 6),
                tag: text(7),
                computeSeconds: isNull(8) ? nil : sqlite3_column_double(lookup, 8),
                checksum: isNull(9) ? nil : UInt32(truncatingIfNeeded: sqlite3_column_int64(lookup, 9))
            )
        default:
            throw Self.error(status, connection)
        }
    }

    private func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(lookup, column) == SQLITE_NULL
    }

    private func text(_ column: Int32) -> String? {
        guard !isNull(column), let bytes = sqlite3_column_text(lookup, column) else { return nil }
        let count = Int(sqlite3_column_bytes(lookup, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    private func blob(_ column: Int32) -> Data? {
        guard !isNull(column) else { return nil }
        let count = Int(sqlite3_column_bytes(lookup, column))
        guard count > 0, let bytes = sqlite3_column_blob(lookup, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    private static func error(_ status: Int32, _ connection: OpaquePointer?) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: status),
            message: connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
        )
    }
}
