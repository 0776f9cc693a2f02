import Foundation
import GRDB
import GRDBSQLite

/// One of GRDB's cached statements, bound and stepped through SQLite's C API.
///
/// GRDB's `Statement.execute(arguments:)` boxes every argument, checks it against the statement
/// and notifies observers: several microseconds a statement, more than SQLite's own work for a
/// one-row upsert. The disk cache's hot write binds its values directly. The statement stays in
/// GRDB's cache (GRDB finalizes it when it closes the connection); ``run(_:)`` always leaves it
/// reset with no bindings, as GRDB expects to find it.
struct RawStatement {
    private let statement: OpaquePointer
    private let connection: OpaquePointer?

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql).sqliteStatement
        connection = db.sqliteConnection
    }

    /// Runs `body` with the statement, then resets it and clears its bindings.
    func run<T>(_ body: (RawStatement) throws -> T) throws -> T {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        return try body(self)
    }

    /// Steps once: `true` for a row, `false` when done.
    ///
    /// - Throws: GRDB's `DatabaseError` with SQLite's code and message.
    func step() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status:
            throw DatabaseError(
                resultCode: ResultCode(rawValue: status),
                message: connection.map { String(cString: sqlite3_errmsg($0)) }
                    ?? String(cString: sqlite3_errstr(status))
            )
        }
    }

    /// Binds UTF-8 bytes that stay valid until the statement is reset (inside ``run(_:)``).
    func bind(_ index: Int32, _ utf8: UnsafeBufferPointer<UInt8>) {
        sqlite3_bind_text(statement, index, utf8.baseAddress, Int32(utf8.count), nil)
    }

    /// Binds `text` whole (a copy), NUL bytes included; `nil` leaves the parameter NULL.
    func bind(_ index: Int32, _ text: String?) {
        guard var text else { return }
        // The byte count, not -1: a C string would end at an embedded NUL byte.
        _ = text.withUTF8 {
            sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_DESTRUCTOR)
        }
    }

    func bind(_ index: Int32, _ value: Int64?) {
        guard let value else { return }
        sqlite3_bind_int64(statement, index, value)
    }

    func bind(_ index: Int32, _ value: Double?) {
        guard let value else { return }
        sqlite3_bind_double(statement, index, value)
    }

    /// Binds `blob` (NULL for `nil`) for the duration of `body`, without copying it.
    func withBlob<T>(_ index: Int32, _ blob: Data?, _ body: () throws -> T) rethrows -> T {
        guard let blob else { return try body() }
        return try blob.withUnsafeBytes { bytes in
            // A zero-length blob still needs a non-NULL pointer to be a blob, not NULL.
            sqlite3_bind_blob(
                statement,
                index,
                bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                Int32(bytes.count),
                nil
            )
            return try body()
        }
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }

    func text(_ column: Int32) -> String? {
        guard sqlite3_column_type(statement, column) != SQLITE_NULL, let bytes = sqlite3_column_text(statement, column)
        else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
}

/// SQLite's `SQLITE_TRANSIENT` (copy the bytes now), which Swift does not import.
private let SQLITE_TRANSIENT_DESTRUCTOR = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
