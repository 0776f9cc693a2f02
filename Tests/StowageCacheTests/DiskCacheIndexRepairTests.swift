import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

/// A damaged index is rebuilt wherever the damage is; a wrong
/// `totals` row is repaired instead of evicting every write.
@Suite("DiskCache index repair")
struct DiskCacheIndexRepairTests {
    private func open(_ scratch: TemporaryDirectory) throws -> DiskCache {
        try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: .init(name: "repair"))
    }

    @Test("garbling any one page of a real index: open, read and write work, and no wrong value is served")
    func garbledIndexPage() throws {
        let template = try TemporaryDirectory()
        var values: [String: Data] = [:]
        do {
            let cache = try open(template)
            for number in 0..<300 {
                let value = Data("value \(number) ".utf8) + Data(repeating: UInt8(number % 251), count: number * 7)
                values["key-\(number)"] = value
                try cache.setData(value, forKey: "key-\(number)", tag: number % 3 == 0 ? "t" : nil)
            }
            // Closed, not just released: its connections are gone before the files are copied.
            try cache.close()
        }
        // A checkpointed, single-file index.
        try DatabaseQueue(path: template.path + "/cache/index.sqlite").writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let indexBytes = try Data(contentsOf: URL(filePath: template.path + "/cache/index.sqlite"))
        let pages = indexBytes.count / 4096
        #expect(pages >= 10)
        var generator = SystemRandomNumberGenerator()
        for page in 0..<pages {
            let scratch = try TemporaryDirectory("garbledIndexPage-\(page)")
            try FileManager.default.copyItem(
                at: template.url.appending(path: "cache"),
                to: scratch.url.appending(path: "cache")
            )
            var garbled = indexBytes
            for offset in (page * 4096)..<((page + 1) * 4096) {
                garbled[offset] = UInt8.random(in: 0...255, using: &generator)
            }
            try garbled.write(to: URL(filePath: scratch.path + "/cache/index.sqlite"))
            let cache = try open(scratch)
            for (key, value) in values {
                let read = try cache.data(forKey: key)
                #expect(read == nil || read == value, "page \(page): wrong value for \(key)")
            }
            // Damage no query meets (an index only writes of other keys touch) is found by the
            // maintenance lane's whole-file check, which then empties the index: trim() runs
            // after it, so the write below cannot be emptied away before it is read back.
            _ = try cache.trim()
            try cache.setData(Data("fresh".utf8), forKey: "fresh")
            #expect(try cache.data(forKey: "fresh") == Data("fresh".utf8), "page \(page)")
        }
    }

    // MARK: - A damaged schema

    /// Damage that leaves every page sound (quick_check passes) but not the format's schema.
    static let schemaDamage = [
        "DROP TABLE entry",
        "DROP TABLE totals",
        "DROP TRIGGER entry_inserted",
        "PRAGMA user_version = 0",
        "PRAGMA user_version = -3",
        "ALTER TABLE entry DROP COLUMN checksum",
    ]

    /// A cache of 30 values (every third in a file) whose index then takes `damage`.
    private func damagedCache(_ damage: String) throws -> TemporaryDirectory {
        let scratch = try TemporaryDirectory("damagedSchema")
        do {
            let cache = try open(scratch)
            for number in 0..<30 {
                try cache.setData(
                    Data(repeating: UInt8(number), count: number % 3 == 0 ? 40_000 : 100),
                    forKey: "k\(number)"
                )
            }
            // Closed here, not left to deinit: the maintenance lane's work after the open holds
            // the cache a moment longer, and a reopen that finds its lock still held takes it for
            // another process's and will not rebuild (seen once in CI).
            try cache.close()
        }
        try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").writeWithoutTransaction { db in
            try db.execute(sql: damage)
        }
        return scratch
    }

    @Test(
        ".rebuild rebuilds an index whose schema is damaged (dropped table, user_version reset)",
        arguments: schemaDamage
    )
    func rebuildsDamagedSchema(damage: String) throws {
        let scratch = try damagedCache(damage)
        let cache = try open(scratch)
        // Rebuilt empty: the files' keys live only in the index (file names hash them one way).
        #expect(try cache.usage().count == 0, "\(damage)")
        #expect(try cache.data(forKey: "k1") == nil)
        #expect(scratch.dataFiles().isEmpty, "the old values' files are gone: \(scratch.dataFiles().count) left")
        #expect(scratch.exists("cache/index.sqlite.damaged"), "the damaged index is kept aside")
        try cache.setData(Data("fresh".utf8), forKey: "fresh")
        try cache.setData(Data(repeating: 9, count: 40_000), forKey: "large")
        #expect(try cache.data(forKey: "fresh") == Data("fresh".utf8))
        #expect(try cache.data(forKey: "large") == Data(repeating: 9, count: 40_000))
        #expect(try cache.usage().count == 2)
        #expect(try cache.removeData(forKey: "fresh"))
        #expect(try cache.usage().count == 1, "the totals triggers are back")
    }

    @Test(
        ".fail reports a damaged schema as .corrupt, naming the index and the way out",
        arguments: schemaDamage
    )
    func reportsDamagedSchema(damage: String) throws {
        let scratch = try damagedCache(damage)
        var configuration = DiskCache.Configuration(name: "repair")
        configuration.corruptIndexPolicy = .fail
        let error = try #require(throws: StowageError.self) {
            try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        }
        #expect(error.code == .corrupt, "\(damage): \(error)")
        #expect(error.message.contains(scratch.path + "/cache/index.sqlite"))
        #expect(error.message.contains("rebuild"))
        #expect(!scratch.exists("cache/index.sqlite.damaged"), "left in place for inspection")
    }

    @Test("a wrong totals row (1 TB under a 10 MB limit) is repaired at open: a new write stays")
    func wrongTotals() throws {
        let scratch = try TemporaryDirectory()
        var configuration = DiskCache.Configuration(name: "totals")
        configuration.sizeLimit = ByteCount(10_000_000)
        let directory = scratch.url.appending(path: "cache")
        // Closed, not left to deinit: the maintenance lane's work after an open can hold the
        // index a moment longer, and the edit's connection then finds it locked.
        let first = try DiskCache(directory: directory, configuration: configuration)
        try first.setData(Data("a".utf8), forKey: "a")
        try first.close()
        try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").write { db in
            try db.execute(sql: "UPDATE totals SET size = 1000000000000 WHERE id = 0")
        }
        let cache = try DiskCache(directory: directory, configuration: configuration)
        try cache.setData(Data("b".utf8), forKey: "b")
        _ = try cache.trim()
        #expect(try cache.data(forKey: "a") == Data("a".utf8))
        #expect(try cache.data(forKey: "b") == Data("b".utf8))
        #expect(try cache.usage().size == ByteCount(2))
    }

    @Test("totals that go wrong while the cache is open are repaired by the trim they trigger")
    func wrongTotalsWhileOpen() throws {
        let scratch = try TemporaryDirectory()
        var configuration = DiskCache.Configuration(name: "totals")
        configuration.sizeLimit = ByteCount(10_000_000)
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        try cache.setData(Data("a".utf8), forKey: "a")
        try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").write { db in
            try db.execute(sql: "UPDATE totals SET size = 1000000000000 WHERE id = 0")
        }
        _ = try cache.trim()
        #expect(try cache.data(forKey: "a") == Data("a".utf8))
        #expect(try cache.usage().size == ByteCount(1))
    }
}
