import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@Suite("DiskCache tags and index format")
struct DiskCacheTagsAndFormatTests {
    @Test("removeAll(tagged:) removes exactly the tagged entries, inline and file-backed, from both tiers")
    func tags() async throws {
        let scratch = try TemporaryDirectory()
        let cache = HybridCache(
            memory: try MemoryCache<String, String>(),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache")),
            serializer: StringSerializer()
        )
        let large = String(repeating: "x", count: 100_000)
        try await cache.setValue("a", forKey: "ada/1", tag: "user:ada")
        try await cache.setValue(large, forKey: "ada/2", tag: "user:ada")
        try await cache.setValue("b", forKey: "bob/1", tag: "user:bob")
        try await cache.setValue("c", forKey: "common")
        #expect(scratch.dataFiles().count == 1)

        let removed = try await cache.removeAll(tagged: "user:ada")
        #expect(Set(removed) == ["ada/1", "ada/2"])
        #expect(cache.memory.value(forKey: "ada/1") == nil)
        #expect(try await cache.value(forKey: "ada/2") == nil)
        #expect(try await cache.value(forKey: "bob/1") == "b")
        #expect(try await cache.value(forKey: "common") == "c")
        #expect(scratch.dataFiles().isEmpty)
        #expect(try await cache.disk.usage().count == 2)
        #expect(try await cache.disk.info(forKey: "bob/1")?.tag == "user:bob")
        // Replacing a value replaces its tag.
        try await cache.setValue("b2", forKey: "bob/1")
        #expect(try await cache.removeAll(tagged: "user:bob").isEmpty)
    }

    @Test("the tag query uses the index, not a scan")
    func tagQueryPlan() throws {
        let scratch = try TemporaryDirectory()
        let path = scratch.url.appending(path: "cache")
        // Closed before the index is opened again: a cache dropped without it keeps its connection
        // while its background work holds it, and one opened without room for the -shm file holds
        // the index in EXCLUSIVE locking mode (a CI run here read "database is locked" after 80 s).
        try DiskCache(directory: path).close()
        let queue = try DatabaseQueue(path: path.appending(path: "index.sqlite").path)
        let plan = try queue.read { db in
            try Row.fetchAll(
                db,
                sql: "EXPLAIN QUERY PLAN DELETE FROM entry WHERE tag = ? RETURNING key",
                arguments: ["t"]
            )
            .map { $0["detail"] as String }.joined(separator: "; ")
        }
        #expect(plan.contains("INDEX entry_tag"), "plan: \(plan)")
        #expect(!plan.contains("SCAN"), "plan: \(plan)")
    }

    @Test("an index of format 1 (before tags) is migrated in place and keeps its entries")
    func migratesFormat1() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // The schema format 1 wrote, with one inline entry.
        let queue = try DatabaseQueue(path: directory.appending(path: "index.sqlite").path)
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE entry (key TEXT NOT NULL PRIMARY KEY, file TEXT, inline BLOB,
                        size INTEGER NOT NULL, created REAL NOT NULL, modified REAL NOT NULL,
                        accessed REAL NOT NULL, expires REAL);
                    CREATE INDEX entry_accessed ON entry(accessed);
                    CREATE INDEX entry_expires ON entry(expires) WHERE expires IS NOT NULL;
                    CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 0), count INTEGER NOT NULL,
                        size INTEGER NOT NULL);
                    INSERT INTO totals VALUES (0, 2, 10005);
                    INSERT INTO entry VALUES ('old', NULL, x'68656c6c6f', 5, 1e9, 1e9, 1e9, NULL);
                    INSERT INTO entry VALUES ('big', 'ab/big-value', NULL, 10000, 1e9, 1e9, 1e9, NULL);
                    """
            )
        }
        try queue.close()
        try FileManager.default.createDirectory(
            at: directory.appending(path: "data/ab"),
            withIntermediateDirectories: true
        )
        try Data(repeating: 7, count: 10_000).write(to: directory.appending(path: "data/ab/big-value"))

        let cache = try DiskCache(directory: directory)
        #expect(try await cache.data(forKey: "old") == Data("hello".utf8))
        #expect(try await cache.data(forKey: "big") == Data(repeating: 7, count: 10_000))
        #expect(try await cache.usage().count == 2)
        // The file-allocation total was computed by the migration and is kept by the new triggers.
        let summary = try #require(try DiskCache.summary(ofDirectory: directory))
        #expect(summary.logicalBytes == ByteCount(10_005))
        let indexOnly = summary.allocatedBytes.rawValue - 12_288
        #expect(indexOnly > 0 && indexOnly % 512 == 0)
        try await cache.removeData(forKey: "big")
        #expect(try DiskCache.summary(ofDirectory: directory)?.logicalBytes == ByteCount(5))
        try await cache.setData(Data("new".utf8), forKey: "new", tag: "t")
        #expect(try await cache.removeAll(tagged: "t") == ["new"])
        #expect(try await cache.usage().count == 1)
        let version = try await DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
            try Int.fetchOne(db, sql: "PRAGMA user_version")
        }
        #expect(version == 4)
    }

    @Test("an index of a newer format is refused with .unsupported and left untouched, even with rebuild on")
    func refusesNewerFormat() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        do {
            let cache = try DiskCache(directory: directory)
            try cache.setData(Data("keep".utf8), forKey: "k")
            try cache.close()  // not left to deinit, which the maintenance lane can delay
        }
        let index = directory.appending(path: "index.sqlite").path
        try DatabaseQueue(path: index).write { db in try db.execute(sql: "PRAGMA user_version = 5") }

        var configuration = DiskCache.Configuration()
        configuration.corruptIndexPolicy = .rebuild
        let error = #expect(throws: StowageError.self) {
            try DiskCache(directory: directory, configuration: configuration)
        }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("format 5") == true)
        let kept = try DatabaseQueue(path: index).read { db in
            try Data.fetchOne(db, sql: "SELECT inline FROM entry WHERE key = 'k'")
        }
        #expect(kept == Data("keep".utf8))
    }
}

@Suite("DiskCache summary")
struct DiskCacheSummaryTests {
    @Test("the summary's counts and allocation follow inserts, replacements (inline ↔ file) and removals")
    func followsChanges() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let clock = ManualClock()
        var configuration = DiskCache.Configuration()
        configuration.clock = clock.cacheClock
        configuration.inlineThreshold = 1_000
        let cache = try DiskCache(directory: directory, configuration: configuration)
        func fileBytes() throws -> Int64 {
            let summary = try #require(try DiskCache.summary(ofDirectory: directory, now: clock.cacheClock.now()))
            let index = ["", "-wal", "-shm"].reduce(Int64(0)) { total, suffix in
                let path = directory.appending(path: "index.sqlite" + suffix).path
                guard FileManager.default.fileExists(atPath: path) else { return total }
                var status = stat()
                stat(path, &status)
                return total + Int64(status.st_blocks) * 512
            }
            return summary.allocatedBytes.rawValue - index
        }
        try cache.setData(Data(count: 5_000), forKey: "a")
        try cache.setData(Data(count: 100), forKey: "b", timeToLive: .seconds(10))
        #expect(try fileBytes() == 8_192)
        try cache.setData(Data(count: 50), forKey: "a")  // file → inline
        #expect(try fileBytes() == 0)
        try cache.setData(Data(count: 4_097), forKey: "b")  // inline → file
        #expect(try fileBytes() == 8_192)
        try cache.removeData(forKey: "b")
        #expect(try fileBytes() == 0)

        try cache.setData(Data(count: 300), forKey: "c", timeToLive: .seconds(10))
        clock.advance(by: .seconds(11))
        let summary = try #require(try DiskCache.summary(ofDirectory: directory, now: clock.cacheClock.now()))
        #expect(summary.count == 2)
        #expect(summary.logicalBytes == ByteCount(350))
        #expect(summary.expiredCount == 1 && summary.expiredBytes == ByteCount(300))
        #expect(try DiskCache.summary(ofDirectory: scratch.url.appending(path: "nothing")) == nil)
    }
}
