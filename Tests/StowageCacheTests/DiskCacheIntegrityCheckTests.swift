import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

/// Opening reads only the index's schema; the whole file is checked on the maintenance lane, and
/// damage a query meets first goes to the corrupt-index policy where it is met.
@Suite("DiskCache integrity check")
struct DiskCacheIntegrityCheckTests {
    /// A closed cache of 300 values of 500 bytes, every third tagged, whose index is checkpointed
    /// into one file; returns its directory.
    private func filledCache(_ scratch: TemporaryDirectory) throws -> URL {
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory, configuration: .init(name: "integrity"))
        for number in 0..<300 {
            try cache.setData(Self.value(number), forKey: "key-\(number)", tag: number % 3 == 0 ? "t" : nil)
        }
        try cache.close()
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return directory
    }

    private static func value(_ number: Int) -> Data {
        Data(String(format: "MARK-%05d-", number).utf8) + Data(repeating: UInt8(number % 251), count: 489)
    }

    /// Overwrites with one repeated byte the 4 KiB page of the index that holds `marker` (a value's bytes),
    /// or page `page` (1-based, as SQLite numbers them).
    private func garble(_ directory: URL, marker: String? = nil, page: Int? = nil) throws {
        let path = directory.appending(path: "index.sqlite")
        var bytes = try Data(contentsOf: path)
        let offset: Int
        if let marker {
            let range = try #require(bytes.range(of: Data(marker.utf8)))
            offset = range.lowerBound / 4096 * 4096
        } else {
            offset = (try #require(page) - 1) * 4096
        }
        bytes.replaceSubrange(offset..<(offset + 4096), with: Data(repeating: 0xA5, count: 4096))
        try bytes.write(to: path)
    }

    /// The root page of the index or table `name`.
    private func rootPage(_ directory: URL, _ name: String) throws -> Int {
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
            try #require(
                try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [name])
            )
        }
    }

    private func configuration(_ policy: DiskCache.CorruptIndexPolicy) -> DiskCache.Configuration {
        var configuration = DiskCache.Configuration(name: "integrity")
        configuration.corruptIndexPolicy = policy
        return configuration
    }

    @Test("a damaged page of values does not fail the open: other values read, the damaged ones are .corrupt (.fail)")
    func damagedPageDoesNotFailOpen() throws {
        let scratch = try TemporaryDirectory()
        let directory = try filledCache(scratch)
        try garble(directory, marker: "MARK-00150-")
        // Opening reads the schema, not every page: the whole-file check is not on this path.
        let cache = try DiskCache(directory: directory, configuration: configuration(.fail))
        #expect(try cache.data(forKey: "key-10") == Self.value(10))
        #expect(try cache.data(forKey: "key-290") == Self.value(290))
        let error = try #require(throws: StowageError.self) { try cache.data(forKey: "key-150") }
        #expect(error.code == .corrupt)
        #expect(error.message.contains(directory.appending(path: "index.sqlite").path))
        try cache.close()
    }

    @Test("damage a read meets empties the index in place (.rebuild): the read misses, and writes work")
    func damageMetByAReadRebuilds() throws {
        let scratch = try TemporaryDirectory()
        let directory = try filledCache(scratch)
        try garble(directory, marker: "MARK-00150-")
        let cache = try DiskCache(directory: directory, configuration: configuration(.rebuild))
        #expect(try cache.data(forKey: "key-150") == nil)
        #expect(try cache.usage().count == 0, "the index is emptied, as a rebuild at open does")
        #expect(try cache.data(forKey: "key-10") == nil)
        try cache.setData(Data("fresh".utf8), forKey: "fresh")
        try cache.setData(Data(repeating: 3, count: 40_000), forKey: "large")
        #expect(try cache.data(forKey: "fresh") == Data("fresh".utf8))
        #expect(try cache.data(forKey: "large") == Data(repeating: 3, count: 40_000))
        #expect(try cache.usage().count == 2, "the totals triggers are back")
        try cache.close()
        // A sound file: the next open finds nothing wrong and keeps both.
        let reopened = try DiskCache(directory: directory, configuration: configuration(.fail))
        #expect(try reopened.data(forKey: "fresh") == Data("fresh".utf8))
        _ = try reopened.trim()
        #expect(try reopened.usage().count == 2)
        try reopened.close()
    }

    @Test("damage only the whole-file check meets (a tag index) is found on the maintenance lane (.rebuild)")
    func maintenanceLaneFindsDamage() throws {
        let scratch = try TemporaryDirectory()
        let directory = try filledCache(scratch)
        try garble(directory, page: rootPage(directory, "entry_tag"))
        let cache = try DiskCache(directory: directory, configuration: configuration(.rebuild))
        // trim() runs on the maintenance lane after the check queued by the open.
        _ = try cache.trim()
        #expect(try cache.usage().count == 0)
        #expect(try cache.data(forKey: "key-1") == nil)
        try cache.setData(Data("fresh".utf8), forKey: "fresh")
        #expect(try cache.data(forKey: "fresh") == Data("fresh".utf8))
        try cache.close()
    }

    @Test("with .fail, damage the check finds leaves the sound values readable and the cache open")
    func maintenanceLaneReportsDamage() throws {
        let scratch = try TemporaryDirectory()
        let directory = try filledCache(scratch)
        try garble(directory, page: rootPage(directory, "entry_tag"))
        let cache = try DiskCache(directory: directory, configuration: configuration(.fail))
        _ = try cache.trim()
        #expect(try cache.data(forKey: "key-1") == Self.value(1))
        #expect(try cache.usage().count == 300)
        let error = try #require(throws: StowageError.self) { try cache.removeAll(tagged: "t") }
        #expect(error.code == .corrupt)
        try cache.close()
    }

    @Test("a wrong totals row is repaired on the maintenance lane after the open")
    func totalsRepairedAfterOpen() throws {
        let scratch = try TemporaryDirectory()
        let directory = try filledCache(scratch)
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).write { db in
            try db.execute(sql: "UPDATE totals SET count = 7, size = 12 WHERE id = 0")
        }
        let cache = try DiskCache(directory: directory, configuration: configuration(.rebuild))
        _ = try cache.trim()
        let usage = try cache.usage()
        #expect(usage.count == 300)
        #expect(usage.size == ByteCount(300 * 500))
        try cache.close()
    }
}
