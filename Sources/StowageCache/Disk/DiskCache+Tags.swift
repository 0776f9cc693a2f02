import Foundation
import GRDB
import StowageCore
import Synchronization

extension DiskCache {
    /// What the index knows about one entry, without reading its value.
    public struct EntryInfo: Sendable, Hashable {
        /// The value's length in bytes.
        public var size: ByteCount
        /// When the key was first stored (kept across replacements).
        public var created: Date
        /// When the value was last replaced.
        public var modified: Date
        /// When it was last read (recorded lazily; may lag by a few seconds).
        public var accessed: Date
        /// When it expires, if it has a time to live.
        public var expires: Date?
        /// Its tag, if it was stored with one.
        public var tag: String?
        /// How long memoize's function took to compute it, if it was memoized.
        public var computeSeconds: Double?
    }

    /// The index's record of `key`, or `nil` when there is none or it expired.
    public func info(forKey key: String) async throws -> EntryInfo? {
        try await BlockingWork.run { try self.info(forKey: key) }
    }

    /// The synchronous overload of `info(forKey:)`: the same work on the calling thread.
    public func info(forKey key: String) throws -> EntryInfo? {
        let now = configuration.clock.now().timeIntervalSince1970
        guard let entry = try currentEntry(forKey: key), !isExpired(entry, key: key, now: now) else {
            return nil
        }
        return EntryInfo(
            size: ByteCount(entry.size),
            created: Date(timeIntervalSince1970: entry.created),
            modified: Date(timeIntervalSince1970: entry.modified),
            accessed: Date(timeIntervalSince1970: entry.accessed),
            expires: entry.expires.map { Date(timeIntervalSince1970: $0) },
            tag: entry.tag,
            computeSeconds: entry.computeSeconds
        )
    }

    /// Removes every entry stored with `tag` (one indexed `DELETE`, whatever the cache's size);
    /// returns the keys removed.
    @discardableResult
    public func removeAll(tagged tag: String) async throws -> [String] {
        try await BlockingWork.run { try self.removeAll(tagged: tag) }
    }

    /// The synchronous overload of `removeAll(tagged:)`: the same work on the calling thread.
    @discardableResult
    public func removeAll(tagged tag: String) throws -> [String] {
        guard !Self.containsNUL(tag) else { return [] }  // never stored (checkStorable)
        try flushStagedWrites()
        let rows = try indexCall {
            try index.write { db in
                try Row.fetchAll(db, sql: "DELETE FROM entry WHERE tag = ? RETURNING key, file", arguments: [tag])
            }
        }
        let keys = rows.map { $0[0] as String }
        files.remove(rows.compactMap { $0[1] as String? })
        accessLog.withLock { log in for key in keys { log.removeValue(forKey: key) } }
        return keys
    }
}

extension DiskCache {
    /// Inserts an empty entry for `key` unless a live one exists; returns whether it did. Other
    /// processes see the claim at once, so it serves as a lock that expires by itself.
    func claim(_ key: String, for lifetime: TimeInterval) throws -> Bool {
        try Self.checkStorable(key: key, tag: nil)
        try flushStagedWrites()
        let now = configuration.clock.now().timeIntervalSince1970
        return try indexCall {
            try index.write { db in
                try db.execute(sql: "DELETE FROM entry WHERE key = ? AND expires <= ?", arguments: [key, now])
                try db.execute(
                    sql: """
                        INSERT INTO entry (key, inline, size, created, modified, accessed, expires)
                        VALUES (?, x'', 0, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING
                        """,
                    arguments: [key, now, now, now, now + lifetime]
                )
                return db.changesCount > 0
            }
        }
    }

    /// The keys that start with `prefix`, in order (one range scan of the index's primary key),
    /// read off Swift's cooperative threads: how the HTTP cache finds what a ban by URI prefix
    /// or by surrogate key removes.
    package func keys(withPrefix prefix: String) async throws -> [String] {
        try await BlockingWork.run { try self.keys(withPrefix: prefix) }
    }

    /// The synchronous overload of `keys(withPrefix:)`: the same scan on the calling thread.
    package func keys(withPrefix prefix: String) throws -> [String] {
        guard !prefix.isEmpty else {
            return try indexCall {
                try index.pool.read { db in try String.fetchAll(db, sql: "SELECT key FROM entry ORDER BY key") }
            }
        }
        // Every key ≥ prefix and < prefix with its last scalar bumped; a prefix ending in the
        // highest scalar falls back to the open range, filtered below.
        var upper = Array(prefix.unicodeScalars)
        let last = upper.removeLast()
        let next = Unicode.Scalar(last.value + 1).map { String(String.UnicodeScalarView(upper + [$0])) }
        return try indexCall {
            try index.pool.read { db in
                let keys =
                    try next.map {
                        try String.fetchAll(
                            db,
                            sql: "SELECT key FROM entry WHERE key >= ? AND key < ? ORDER BY key",
                            arguments: [prefix, $0]
                        )
                    }
                    ?? String.fetchAll(
                        db,
                        sql: "SELECT key FROM entry WHERE key >= ? ORDER BY key",
                        arguments: [prefix]
                    )
                // Bytes, as the range: `hasPrefix` (canonical equivalence) let the levels drop a
                // key from memory that this kept (KeyPrefix).
                return keys.filter { KeyPrefix.covers($0, under: prefix) }
            }
        }
    }
}
