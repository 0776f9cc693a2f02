import Dispatch
import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

/// Deferred durability, group commit, the prepared read path and the access-time resolution.
@Suite("DiskCache durability and hot path")
struct DiskCacheDurabilityTests {
    private func open(
        _ scratch: TemporaryDirectory,
        _ edit: (inout DiskCache.Configuration) -> Void = { _ in }
    ) throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "test")
        edit(&configuration)
        return try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
    }

    /// Rows the index file holds for `key`, read with a connection of the test's own.
    private func committedRows(_ scratch: TemporaryDirectory, key: String) throws -> Int {
        try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM entry WHERE key = ?", arguments: [key]) ?? 0
        }
    }

    @Test("a deferred write is read back at once, and reaches the index only when its batch commits")
    func deferredVisibleAtOnce() async throws {
        let scratch = try TemporaryDirectory()
        // The commit comes from `flush()`, not the timer, whose clock never moves.
        let cache = try open(scratch) {
            $0.durability = .deferred(maximumDelay: .seconds(60))
            $0.deferredCommitClock = SteppedClock()
        }
        try await cache.setData(Data("staged".utf8), forKey: "k")
        #expect(try await cache.data(forKey: "k") == Data("staged".utf8))
        #expect(try await cache.data(forKey: "k") == Data("staged".utf8))
        #expect(try await cache.contains(key: "k"))
        #expect(try committedRows(scratch, key: "k") == 0)
        try await cache.flush()
        #expect(try committedRows(scratch, key: "k") == 1)
        #expect(try await cache.data(forKey: "k") == Data("staged".utf8))
    }

    @Test(
        "a deferred batch commits its writes in the order they were made, so the table keeps least recently used rows together"
    )
    func deferredBatchInWriteOrder() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) {
            $0.durability = .deferred(maximumDelay: .seconds(60))
            $0.deferredCommitClock = SteppedClock()
        }
        defer { try? cache.close() }
        let keys = (0..<300).map { "key-\($0)" }
        for key in keys { try cache.setData(Data([1]), forKey: key) }
        // A rewrite is the latest write of all: its row comes last.
        try cache.setData(Data([2]), forKey: "key-0")
        try cache.flush()
        let byRowid = try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT key FROM entry ORDER BY rowid")
        }
        #expect(byRowid == Array(keys.dropFirst()) + ["key-0"])
    }

    @Test("a writer that fills the staging commits it itself, so staged memory stays bounded")
    func fullStagingCommitsAtOnce() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) {
            $0.durability = .deferred(maximumDelay: .seconds(60))
            $0.deferredCommitClock = SteppedClock()
        }
        // 4,095 writes stay staged; the 4,096th commits them all with itself.
        for index in 0..<4_095 { try cache.setData(Data([UInt8(index & 0xFF)]), forKey: "k\(index)") }
        #expect(try committedRows(scratch, key: "k0") == 0)
        try cache.setData(Data([1]), forKey: "last")
        #expect(try committedRows(scratch, key: "k0") == 1)
        #expect(try committedRows(scratch, key: "last") == 1)
        // Inline bytes count too: 17 values of 1 MiB each, kept inline, pass 16 MiB.
        let largeScratch = try TemporaryDirectory()
        let large = try open(largeScratch) {
            $0.durability = .deferred(maximumDelay: .seconds(60))
            $0.deferredCommitClock = SteppedClock()
            $0.inlineThreshold = 2 << 20
        }
        for index in 0..<15 { try large.setData(Data(count: 1 << 20), forKey: "big\(index)") }
        #expect(try committedRows(largeScratch, key: "big0") == 0)
        try large.setData(Data(count: 1 << 20), forKey: "big15")
        #expect(try committedRows(largeScratch, key: "big0") == 1)
    }

    @Test("the WAL is checkpointed beside the writers, and stays bounded")
    func backgroundCheckpoints() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        let index = scratch.path + "/cache/index.sqlite"
        func size(_ path: String) -> Int {
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        let value = Data(repeating: 7, count: 1_024)
        // On a thread of their own: thousands of sets must neither hold a cooperative thread
        // nor flood the pool with resumptions while other tests run beside this one.
        // ~1,000 commits of ~5 pages: under the writer's own fallback (8,000 pages), so only the
        // background checkpointer moves pages into the database file while the cache is open.
        try await onOwnThread { for index in 0..<1_000 { try cache.setData(value, forKey: "k\(index)") } }
        // The 1,000th commit queued a checkpoint (every 200th does): once the lane has run what
        // is queued, the pages of the first 1,000 sets are in the database file.
        _ = try await cache.maintenance.run {}
        #expect(cache.index.checkpointer?.checkpointsAttempted ?? 0 >= 1)
        #expect(size(index) >= 512 * 1_024, "the database file holds the checkpointed values")
        // 20,000 more commits, ~100,000 pages (~400 MB) without checkpoints: the WAL stays
        // within twice the writer's fallback (8,000 pages of 4 KiB plus frame headers). The WAL
        // restarts from its beginning only when a write begins with every frame copied, which
        // the background checkpoints never see while this loop commits; once they find the log
        // past 4,000 frames, the next committing writer copies the rest itself.
        try await onOwnThread {
            for index in 0..<20_000 { try cache.setData(value, forKey: "m\(index % 5_000)") }
        }
        #expect(size(index + "-wal") <= 16_000 * 4_120)
        #expect(try await cache.data(forKey: "m4999") == value)
    }

    @Test("a key or tag with a NUL byte is refused, and never reaches another key's value")
    func nulBytesInKeysAndTags() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        try cache.setData(Data("a".utf8), forKey: "a", tag: "t")
        // SQLite text through GRDB ends at a NUL byte: "a\0b" would have been "a".
        let keyError = try #require(throws: StowageError.self) {
            try cache.setData(Data("b".utf8), forKey: "a\u{0}b")
        }
        #expect(keyError.code == .invalidArgument)
        #expect(keyError.message.contains("NUL"))
        let tagError = try #require(throws: StowageError.self) {
            try cache.setData(Data("b".utf8), forKey: "b", tag: "t\u{0}x")
        }
        #expect(tagError.code == .invalidArgument)
        #expect(try cache.data(forKey: "a\u{0}b") == nil)
        #expect(try cache.removeData(forKey: "a\u{0}b") == false)
        #expect(try cache.removeAll(tagged: "t\u{0}x").isEmpty)
        #expect(try cache.contains(key: "b") == false)
        #expect(try cache.data(forKey: "a") == Data("a".utf8), "the value of \"a\" is untouched")
        #expect(try cache.info(forKey: "a")?.tag == "t")
    }

    @Test("an index swapped for a symlink after open: the checkpointer never opens its target")
    func symlinkedIndexIsNotFollowed() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        let value = Data(repeating: 7, count: 1_024)
        try await cache.setData(value, forKey: "first")
        // A database outside the cache, in WAL mode, with committed pages still in its WAL: a
        // checkpoint through a link to it would copy them into it.
        let outside = scratch.path + "/outside.sqlite"
        var configuration = GRDB.Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        let holder = try DatabasePool(path: outside, configuration: configuration)
        try await holder.write { db in
            try db.execute(sql: "CREATE TABLE entry(x); INSERT INTO entry VALUES (zeroblob(200000))")
        }
        func size(_ path: String) -> Int {
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        let outsideSize = size(outside)
        let index = scratch.path + "/cache/index.sqlite"
        #expect(rename(index, index + ".moved") == 0)
        #expect(symlink(outside, index) == 0)
        // Past two checkpoint marks (every 200 commits); the writer keeps its open file.
        try await onOwnThread { for index in 0..<400 { try cache.setData(value, forKey: "k\(index)") } }
        let checkpointer = try #require(cache.index.checkpointer)
        try await eventually { checkpointer.checkpointsAttempted >= 1 }
        #expect(size(outside) == outsideSize, "nothing was checkpointed into the link's target")
        _ = holder
    }

    @Test("an index swapped for a symlink to another cache's index: a new reader does not serve its values")
    func symlinkedIndexIsNotRead() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        try cache.setData(Data("mine".utf8), forKey: "first")
        let otherScratch = try TemporaryDirectory()
        let other = try open(otherScratch)
        try other.setData(Data("planted".utf8), forKey: "first")
        let index = scratch.path + "/cache/index.sqlite"
        #expect(rename(index, index + ".moved") == 0)
        #expect(symlink(otherScratch.path + "/cache/index.sqlite", index) == 0)
        // No read happened before the swap, so this one opens a reader connection now.
        let read = try? cache.data(forKey: "first")
        #expect(read != Data("planted".utf8), "the link's target must never be served")
    }

    @Test("deferred batches commit by themselves within the delay")
    func deferredCommitsByItself() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) { $0.durability = .deferred(maximumDelay: .milliseconds(10)) }
        for number in 0..<100 { try await cache.setData(Data("v\(number)".utf8), forKey: "k\(number)") }
        try await eventually {
            try await DatabaseQueue(path: scratch.path + "/cache/index.sqlite").read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM entry") ?? 0
            } == 100
        }
    }

    @Test("a deferred batch commits when its delay has passed on the deferred-commit clock")
    func deferredCommitFollowsItsClock() async throws {
        let scratch = try TemporaryDirectory()
        let clock = SteppedClock()
        let cache = try open(scratch) {
            $0.durability = .deferred(maximumDelay: .seconds(60))
            $0.deferredCommitClock = clock
        }
        try await cache.setData(Data("staged".utf8), forKey: "k")
        // The timer waits on the stepped clock: a real 60 s timer never shows up here.
        try await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(59))
        #expect(clock.sleeperCount == 1)
        #expect(try committedRows(scratch, key: "k") == 0)
        clock.advance(by: .seconds(1))
        try await eventually { try committedRows(scratch, key: "k") == 1 }
    }

    @Test("a removal after a deferred write is not undone when the batch commits")
    func removalAfterDeferredWrite() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) {
            $0.durability = .deferred(maximumDelay: .seconds(30))
            $0.inlineThreshold = 8
        }
        try cache.setData(Data("a value in a file".utf8), forKey: "gone")
        try cache.setData(Data("x".utf8), forKey: "tagged", tag: "t")
        #expect(try cache.removeData(forKey: "gone"))
        #expect(try cache.removeAll(tagged: "t") == ["tagged"])
        try cache.flush()
        #expect(try cache.data(forKey: "gone") == nil)
        #expect(try cache.data(forKey: "tagged") == nil)
        #expect(try committedRows(scratch, key: "gone") == 0)
        #expect(scratch.dataFiles().isEmpty)
    }

    @Test("a deferred file value replaced before its commit leaves only the newer file")
    func deferredReplacementLeavesOneFile() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) {
            $0.durability = .deferred(maximumDelay: .seconds(30))
            $0.inlineThreshold = 8
        }
        try cache.setData(Data(repeating: 1, count: 1_000), forKey: "k")
        try cache.setData(Data(repeating: 2, count: 2_000), forKey: "k")
        #expect(scratch.dataFiles().count == 1)
        try cache.flush()
        #expect(try cache.data(forKey: "k") == Data(repeating: 2, count: 2_000))
        #expect(scratch.dataFiles().count == 1)
        #expect(try cache.usage().size == ByteCount(2_000))
    }

    @Test("closing a cache commits what it staged")
    func closingCommits() throws {
        let scratch = try TemporaryDirectory()
        do {
            let cache = try open(scratch) { $0.durability = .deferred(maximumDelay: .seconds(30)) }
            try cache.setData(Data("kept".utf8), forKey: "k")
            try cache.close()
        }
        let reopened = try open(scratch)
        #expect(try reopened.data(forKey: "k") == Data("kept".utf8))
    }

    @Test("a streamed write after a deferred write of the same key wins")
    func streamedWriteAfterDeferred() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) { $0.durability = .deferred(maximumDelay: .seconds(30)) }
        try cache.setData(Data("old".utf8), forKey: "k")
        let writer = try cache.beginStreamingWrite(forKey: "k")
        try Data("new".utf8).withUnsafeBytes { try writer.write($0) }
        try writer.commit()
        try cache.flush()
        #expect(try cache.data(forKey: "k") == Data("new".utf8))
    }

    @Test("eight threads writing at once: every value is there and the totals are right")
    func concurrentWritersShareCommits() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) { $0.inlineThreshold = 512 }
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { writer in
            for number in 0..<250 {
                let size = number % 5 == 0 ? 2_000 : 100
                do {
                    try cache.setData(
                        Data(repeating: UInt8(writer), count: size),
                        forKey: "w\(writer)-\(number)"
                    )
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        let usage = try cache.usage()
        #expect(usage.count == 2_000)
        #expect(usage.size == ByteCount(8 * (50 * 2_000 + 200 * 100)))
        for writer in 0..<8 {
            for number in stride(from: 0, to: 250, by: 7) {
                let size = number % 5 == 0 ? 2_000 : 100
                #expect(
                    try cache.data(forKey: "w\(writer)-\(number)")
                        == Data(repeating: UInt8(writer), count: size)
                )
            }
        }
        #expect(scratch.dataFiles().count == 8 * 50)
    }

    @Test("a second handle on the directory reads a write at once")
    func secondHandleReadsAtOnce() async throws {
        let scratch = try TemporaryDirectory()
        let writer = try open(scratch)
        let reader = try open(scratch)
        #expect(try await reader.data(forKey: "k") == nil)
        try await writer.setData(Data("one".utf8), forKey: "k")
        #expect(try await reader.data(forKey: "k") == Data("one".utf8))
        try await writer.setData(Data("two".utf8), forKey: "k")
        #expect(try await reader.data(forKey: "k") == Data("two".utf8))
        try await writer.removeData(forKey: "k")
        #expect(try await reader.data(forKey: "k") == nil)
        #expect(reader.statistics.hits == 2)
        #expect(reader.statistics.misses == 2)
    }

    @Test("reads record their time only when the recorded one is a resolution old")
    func accessTimeResolution() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let start = clock.cacheClock.now()
        let cache = try open(scratch) { $0.clock = clock.cacheClock }
        try cache.setData(Data("v".utf8), forKey: "k")
        clock.advance(by: .seconds(30))
        _ = try cache.data(forKey: "k")
        try cache.flushAccessLog()
        #expect(try cache.info(forKey: "k")?.accessed == start)
        clock.advance(by: .seconds(31))
        _ = try cache.data(forKey: "k")
        try cache.flushAccessLog()
        #expect(try cache.info(forKey: "k")?.accessed == start + 61)

        let exact = try open(scratch) {
            $0.clock = clock.cacheClock
            $0.accessTimeResolution = .seconds(0)
        }
        clock.advance(by: .seconds(1))
        _ = try exact.data(forKey: "k")
        try exact.flushAccessLog()
        #expect(try exact.info(forKey: "k")?.accessed == start + 62)

        // A short age limit narrows the resolution to a sixteenth of it (here 10 s).
        let aging = try open(scratch) {
            $0.clock = clock.cacheClock
            $0.maximumAge = .seconds(160)
        }
        clock.advance(by: .seconds(11))
        _ = try aging.data(forKey: "k")
        try aging.flushAccessLog()
        #expect(try aging.info(forKey: "k")?.accessed == start + 73)
    }

    @Test("bad durability and resolution settings are refused with what to do")
    func badSettings() throws {
        let scratch = try TemporaryDirectory()
        for edit: (inout DiskCache.Configuration) -> Void in [
            { $0.durability = .deferred(maximumDelay: .seconds(0)) },
            { $0.durability = .deferred(maximumDelay: .seconds(-1)) },
            { $0.durability = .deferred(maximumDelay: .seconds(3_600)) },
            { $0.accessTimeResolution = .seconds(-1) },
        ] {
            #expect {
                _ = try open(scratch, edit)
            } throws: { error in
                (error as? StowageError)?.code == .invalidConfiguration
            }
        }
        #expect(try open(scratch) { $0.synchronousWrites = true }.configuration.durability == .powerLoss)
    }

    @Test("the index's writer runs at the durability's synchronous level: FULL for .powerLoss, NORMAL otherwise")
    func writerSynchronousLevel() throws {
        for (durability, level) in [(DiskCache.Durability.powerLoss, 2), (.processCrash, 1)] {
            let scratch = try TemporaryDirectory()
            let cache = try open(scratch) { $0.durability = durability }
            defer { try? cache.close() }
            // GRDB's pool sets NORMAL on its writer after the cache's own setup ran.
            let synchronous = try cache.index.pool.writeWithoutTransaction { db in
                try Int.fetchOne(db, sql: "PRAGMA synchronous")
            }
            #expect(synchronous == level, "\(durability)")
        }
    }
}
