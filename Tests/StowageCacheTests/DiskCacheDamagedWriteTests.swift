import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

/// A write whose commit meets a damaged index (`.rebuild`): the index is emptied, the write runs
/// again on the fresh index, and its value must be there afterwards, a file value's too.
@Suite("DiskCache write meeting a damaged index")
struct DiskCacheDamagedWriteTests {
    /// A closed cache of 300 inline values whose `entry` table's root page is then overwritten.
    private func damagedCache(_ scratch: TemporaryDirectory) throws -> URL {
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory, configuration: configuration)
        for number in 0..<300 {
            try cache.setData(Data(repeating: UInt8(number % 251), count: 200), forKey: "key-\(number)")
        }
        try cache.close()
        let path = directory.appending(path: "index.sqlite").path
        let root = try DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            return try #require(
                try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'entry'")
            )
        }
        var bytes = try Data(contentsOf: URL(filePath: path))
        let offset = (root - 1) * 4096
        bytes.replaceSubrange(offset..<(offset + 4096), with: Data(repeating: 0xA5, count: 4096))
        try bytes.write(to: URL(filePath: path))
        return directory
    }

    private var configuration: DiskCache.Configuration {
        var configuration = DiskCache.Configuration(name: "damaged-write")
        configuration.corruptIndexPolicy = .rebuild
        return configuration
    }

    @Test("an async file write that meets the damage is readable after it returns .stored")
    func asyncFileWrite() async throws {
        for round in 0..<5 {
            let scratch = try TemporaryDirectory("asyncFileWrite-\(round)")
            let cache = try DiskCache(directory: try damagedCache(scratch), configuration: configuration)
            let value = Data(repeating: 7, count: 40_000)
            let outcome = try await cache.setData(value, forKey: "large")
            #expect(outcome == .stored)
            #expect(try await cache.data(forKey: "large") == value, "round \(round)")
            try await cache.close()
        }
    }

    @Test("a sync file write that meets the damage is readable after it returns .stored")
    func syncFileWrite() throws {
        for round in 0..<5 {
            let scratch = try TemporaryDirectory("syncFileWrite-\(round)")
            let cache = try DiskCache(directory: try damagedCache(scratch), configuration: configuration)
            let value = Data(repeating: 7, count: 40_000)
            let outcome = try cache.setData(value, forKey: "large")
            #expect(outcome == .stored)
            #expect(try cache.data(forKey: "large") == value, "round \(round)")
            try cache.close()
        }
    }
}
