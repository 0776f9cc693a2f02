import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

/// The cull a commit runs when it takes the cache over a limit (`DiskCacheCommitQueue.Cull`,
/// python-diskcache's `cull` inside `set`): the write's own transaction removes least recently
/// used rows, at most 64 more than it writes, and the following writes go on down to trimRatio.
@Suite("DiskCache cull")
struct DiskCacheCullTests {
    /// A cache with a count limit of 200, filled to it one second apart (key-0 oldest), after
    /// the open's totals check (which lets commits cull).
    private func filledToTheLimit(_ scratch: TemporaryDirectory, _ clock: ManualClock) throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "cull")
        configuration.countLimit = 200
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        for number in 0..<200 {
            clock.advance(by: .seconds(1))
            try cache.setData(Data([UInt8(truncatingIfNeeded: number)]), forKey: "key-\(number)")
        }
        _ = try cache.trim()  // runs after the open's integrity check on the maintenance lane
        let isVerified = cache.commits.totalsAreVerified.load(ordering: .acquiring)
        #expect(isVerified)
        return cache
    }

    @Test(
        "a write over the count limit culls in its own transaction: under the limit when it returns, at trimRatio two writes later"
    )
    func cullInTheWrite() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try filledToTheLimit(scratch, clock)
        defer { try? cache.close() }
        clock.advance(by: .seconds(1))
        try cache.setData(Data([1]), forKey: "one-more")
        // The row over the limit and 64 more went in the write's transaction, oldest first.
        #expect(try cache.usage().count == 201 - 65)
        #expect(try !cache.contains(key: "key-64"))
        #expect(try cache.contains(key: "key-65"))
        #expect(cache.statistics.evictions == 65)
        // The next write goes on down to the target, 100 (trimRatio 0.5), and the cull ends.
        clock.advance(by: .seconds(1))
        try cache.setData(Data([2]), forKey: "two-more")
        #expect(try cache.usage().count == 100)
        #expect(try !cache.contains(key: "key-101"))
        #expect(try cache.contains(key: "key-102"))
        clock.advance(by: .seconds(1))
        try cache.setData(Data([3]), forKey: "three-more")
        #expect(try cache.usage().count == 101)
        for key in ["one-more", "two-more", "three-more", "key-199"] { #expect(try cache.contains(key: key)) }
    }

    @Test("trim() finishes a cull in progress")
    func trimFinishesTheCull() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try filledToTheLimit(scratch, clock)
        defer { try? cache.close() }
        clock.advance(by: .seconds(1))
        try cache.setData(Data([1]), forKey: "one-more")
        #expect(try cache.usage().count == 136)
        let report = try cache.trim()
        #expect(report.evicted == 36)
        #expect(try cache.usage().count == 100)
        #expect(try cache.contains(key: "one-more"))
    }

    @Test("a cull begun on a totals row that went wrong is called off by the totals check it asks for")
    func wrongTotalsCallOffTheCull() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try filledToTheLimit(scratch, clock)
        defer { try? cache.close() }
        // Back to 190 rows, under the limit; then the row claims 1,000.
        for number in 0..<10 { try cache.removeData(forKey: "key-\(number)") }
        try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").write { db in
            try db.execute(sql: "UPDATE totals SET count = 1000 WHERE id = 0")
        }
        clock.advance(by: .seconds(1))
        try cache.setData(Data([1]), forKey: "one-more")
        // The write culled on the row's word (65 rows), and queued the check; trim() runs after
        // it: the row is repaired and the cull called off, so nothing more goes.
        _ = try cache.trim()
        #expect(try cache.usage().count == 191 - 65)
        #expect(try cache.contains(key: "one-more"))
    }

    @Test(
        "a trim's batch runs with the eviction page cache and in-memory statement journals, and the writer gets its own back after"
    )
    func trimBatchConnectionSettings() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try filledToTheLimit(scratch, clock)
        defer { try? cache.close() }
        func settings(_ db: Database) throws -> [Int] {
            [
                try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? 0,
                try Int.fetchOne(db, sql: "PRAGMA temp_store") ?? -1,
            ]
        }
        let before = try cache.index.pool.writeWithoutTransaction(settings)
        #expect(before[0] != DiskCacheIndex.evictionCacheSize)
        let during = try cache.index.evictionWrite(settings)
        #expect(during == [DiskCacheIndex.evictionCacheSize, 2])  // 2: MEMORY
        #expect(try cache.index.pool.writeWithoutTransaction(settings) == before)
        // A batch that fails puts them back too.
        #expect(throws: DatabaseError.self) {
            try cache.index.evictionWrite { db in try db.execute(sql: "DELETE FROM no_such_table") }
        }
        #expect(try cache.index.pool.writeWithoutTransaction(settings) == before)
        // And a trim through them leaves the writer as it was.
        _ = try cache.trim(freeing: ByteCount(100))
        #expect(try cache.usage().count == 100)
        #expect(try cache.index.pool.writeWithoutTransaction(settings) == before)
    }
}
