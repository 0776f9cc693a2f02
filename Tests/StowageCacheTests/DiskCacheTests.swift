import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@Suite("DiskCache")
struct DiskCacheTests {
    private func open(
        _ scratch: TemporaryDirectory,
        _ edit: (inout DiskCache.Configuration) -> Void = { _ in }
    ) throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "test")
        edit(&configuration)
        return try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
    }

    @Test("values round-trip inline and as files, and survive reopening")
    func roundTrip() async throws {
        let scratch = try TemporaryDirectory()
        let small = Data("hello".utf8)
        let large = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        do {
            let cache = try open(scratch)
            try await cache.setData(small, forKey: "small")
            try await cache.setData(large, forKey: "https://example.com/images/photo.png?size=2")
            try await cache.setData(Data(), forKey: "empty")
            #expect(try await cache.data(forKey: "small") == small)
            #expect(try await cache.data(forKey: "missing") == nil)
            try await cache.close()  // not left to deinit, which the maintenance lane can delay
        }
        let cache = try open(scratch)
        #expect(try await cache.data(forKey: "small") == small)
        #expect(try await cache.data(forKey: "https://example.com/images/photo.png?size=2") == large)
        #expect(try await cache.data(forKey: "empty") == Data())
        let usage = try await cache.usage()
        #expect(usage.count == 3)
        #expect(usage.size.rawValue == Int64(small.count + large.count))
        // Only the large value is a file; its name is a hash with the key's extension.
        let files = scratch.dataFiles()
        #expect(files.count == 1)
        let name = try #require(files.first)
        #expect(name.hasSuffix(".png"))
        #expect(!name.contains("example"))
        #expect(cache.statistics.hits == 3 && cache.statistics.misses == 0)
    }

    @Test("the directory carries CACHEDIR.TAG and the backup exclusion")
    func marks() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        #expect(CacheDirectoryTag.isPresent(in: cache.directory))
        #expect(try Marks.isExcludedFromBackup(cache.directory))
    }

    @Test("replacing a value removes the old file; removing a key removes its file")
    func replaceAndRemove() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        try await cache.setData(Data(count: 50_000), forKey: "k.bin")
        try await cache.setData(Data(repeating: 7, count: 60_000), forKey: "k.bin")
        #expect(scratch.dataFiles().count == 1)
        #expect(try await cache.data(forKey: "k.bin") == Data(repeating: 7, count: 60_000))
        try await cache.setData(Data("now small".utf8), forKey: "k.bin")
        #expect(scratch.dataFiles().isEmpty)
        #expect(try await cache.removeData(forKey: "k.bin"))
        #expect(try await !cache.removeData(forKey: "k.bin"))
        #expect(try await cache.usage().count == 0)
    }

    @Test("after writing 3x the size limit: within the limit, most recent entries kept, trimmed to half")
    func sizeLimit() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) {
            $0.sizeLimit = ByteCount(1_000_000)
            $0.inlineThreshold = 10_000
        }
        // 150 × 20 KB = 3 MB, three times the limit, all files.
        for number in 0..<150 {
            try await cache.setData(Data(repeating: UInt8(number), count: 20_000), forKey: "key-\(number)")
        }
        try await cache.trim()
        let usage = try await cache.usage()
        #expect(usage.size.rawValue <= 1_000_000)
        #expect(try await cache.data(forKey: "key-149") == Data(repeating: 149, count: 20_000))
        #expect(try await cache.data(forKey: "key-0") == nil)
        #expect(cache.statistics.evictions >= 100)
        // Index and files agree after trimming.
        #expect(scratch.dataFiles().count == usage.count)
    }

    @Test("going one entry over the count limit trims to exactly the target, least recently used first")
    func countLimitTarget() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try open(scratch) {
            $0.countLimit = 100
            $0.clock = clock.cacheClock
        }
        for number in 0..<100 {
            clock.advance(by: .seconds(1))
            try await cache.setData(Data([UInt8(number)]), forKey: "key-\(number)")
        }
        // Reading key-0 makes it the most recently used.
        clock.advance(by: .seconds(1))
        #expect(try await cache.data(forKey: "key-0") == Data([0]))
        #expect(try await cache.usage().count == 100)
        clock.advance(by: .seconds(1))
        try await cache.setData(Data([1]), forKey: "one-more")
        try await cache.trim()
        #expect(try await cache.usage().count == 50)
        #expect(try await cache.contains(key: "key-0"))
        #expect(try await cache.contains(key: "one-more"))
        #expect(try await !cache.contains(key: "key-1"))
        #expect(try await cache.contains(key: "key-99"))
        #expect(try await !cache.contains(key: "key-51"))
        #expect(try await cache.contains(key: "key-52"))
    }

    @Test("per-entry and default time-to-live expire values by the injected clock")
    func timeToLive() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try open(scratch) {
            $0.clock = clock.cacheClock
            $0.defaultTimeToLive = .seconds(100)
        }
        try cache.setData(Data("a".utf8), forKey: "short", timeToLive: .seconds(10))
        try cache.setData(Data("b".utf8), forKey: "default")
        clock.advance(by: .seconds(11))
        #expect(try cache.data(forKey: "short") == nil)
        #expect(try cache.data(forKey: "default") == Data("b".utf8))
        clock.advance(by: .seconds(90))
        #expect(try cache.data(forKey: "default") == nil)
        let report = try cache.trim()
        #expect(report.expired == 2)
        #expect(try cache.usage().count == 0)
    }

    @Test(
        "the age limit follows the chosen date",
        arguments: [DiskCache.AgeBasis.accessed, .modified, .created]
    )
    func ageLimit(basis: DiskCache.AgeBasis) throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try open(scratch) {
            $0.clock = clock.cacheClock
            $0.maximumAge = .seconds(100)
            $0.ageBasis = basis
        }
        try cache.setData(Data("v1".utf8), forKey: "key")
        clock.advance(by: .seconds(60))
        try cache.setData(Data("v2".utf8), forKey: "rewritten")  // unrelated key
        _ = try cache.data(forKey: "key")  // an access at +60
        clock.advance(by: .seconds(60))
        // +120: 120 s since creation and modification, 60 s since the access.
        let alive = try cache.data(forKey: "key") != nil
        #expect(alive == (basis == .accessed))
        let report = try cache.trim()
        #expect(report.expired == (basis == .accessed ? 0 : 1))
    }

    @Test("a file that lost bytes reads as a miss and is dropped, never returned")
    func truncatedFile() throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch)
        try cache.setData(Data(repeating: 1, count: 100_000), forKey: "big")
        let file = try #require(scratch.dataFiles().first)
        let path = scratch.path + "/cache/data/" + file
        #expect(truncate(path, 50_000) == 0)
        #expect(try cache.data(forKey: "big") == nil)
        #expect(try cache.usage().count == 0)
        #expect(scratch.dataFiles().isEmpty)
    }

    @Test("orphan files and rows without files are collected on open")
    func orphansCollected() throws {
        let scratch = try TemporaryDirectory()
        do {
            let cache = try open(scratch)
            try cache.setData(Data(count: 30_000), forKey: "kept")
            try cache.setData(Data(count: 30_000), forKey: "loses-file")
            // Closed here: orphans are collected only by the cache's only user, and a handle left
            // to deinit (which the maintenance lane can delay) still holds the lock at the reopen.
            try cache.close()
        }
        let files = scratch.dataFiles()
        let victim = try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").read { db in
            try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 'loses-file'")
        }
        try FileManager.default.removeItem(atPath: scratch.path + "/cache/data/" + #require(victim))
        try FileManager.default.createDirectory(
            at: scratch.url.appending(path: "cache/data/00"),
            withIntermediateDirectories: true
        )
        try Data(count: 10).write(to: scratch.url.appending(path: "cache/data/00/orphan"))
        try Data(count: 10).write(to: scratch.url.appending(path: "cache/tmp/123-456.tmp"))
        let cache = try open(scratch)
        #expect(try cache.usage().count == 1)
        #expect(scratch.dataFiles() == files.subtracting([victim!]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/cache/tmp").isEmpty)
    }

    @Test("a corrupt index is rebuilt empty by default, or reported as corrupt")
    func corruptIndex() async throws {
        let scratch = try TemporaryDirectory()
        do {
            let cache = try open(scratch)
            try await cache.setData(Data(count: 30_000), forKey: "a")
            // Closed before the index is garbled: a handle merely released goes when its last
            // reference does, and the maintenance lane's check after an open may hold one; its
            // SQLite connections, closing then, would checkpoint the old pages over the garbage.
            try await cache.close()
        }
        let indexPath = scratch.url.appending(path: "cache/index.sqlite")
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: indexPath.path + suffix) }
        try Data(repeating: 0x41, count: 8_192).write(to: indexPath)
        #expect {
            try open(scratch) { $0.corruptIndexPolicy = .fail }
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .corrupt && error.message.contains("rebuild")
        }
        // The first handle's lock goes with its last reference, which its background work may
        // hold a moment longer on a loaded machine: until then the index is (rightly) not
        // rebuilt under another user.
        var reopened: DiskCache?
        try await eventually {
            do {
                reopened = try open(scratch)
                return true
            } catch let error as StowageError where error.message.contains("another process has the cache open") {
                return false
            }
        }
        let rebuilt = try #require(reopened)
        #expect(try await rebuilt.usage().count == 0)
        #expect(scratch.dataFiles().isEmpty)
        try await rebuilt.setData(Data("fresh".utf8), forKey: "a")
        #expect(try await rebuilt.data(forKey: "a") == Data("fresh".utf8))
    }

    @Test("bad configurations are invalidConfiguration errors")
    func badConfiguration() throws {
        let scratch = try TemporaryDirectory()
        for edit: (inout DiskCache.Configuration) -> Void in [
            { $0.sizeLimit = ByteCount(0) }, { $0.countLimit = -1 }, { $0.trimRatio = 1.5 },
            { $0.maximumAge = .seconds(0) },
        ] {
            #expect {
                try open(scratch, edit)
            } throws: { ($0 as? StowageError)?.code == .invalidConfiguration }
        }
    }

    @Test("many tasks reading and writing overlapping keys never see a wrong value")
    func concurrentReadersAndWriters() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try open(scratch) { $0.inlineThreshold = 2_000 }
        func value(_ key: Int, _ version: Int) -> Data {
            Data(repeating: UInt8(truncatingIfNeeded: key &* 7 &+ version), count: key % 2 == 0 ? 100 : 5_000)
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for step in 0..<400 {
                        let key = (step * 13 + worker) % 50
                        if step % 3 == 0 {
                            try await cache.setData(value(key, worker), forKey: "k\(key)")
                        } else if let data = try await cache.data(forKey: "k\(key)") {
                            let valid = (0..<8).contains { value(key, $0) == data }
                            if !valid { wrong += 1 }
                        }
                    }
                    return wrong
                }
            }
            var wrong = 0
            for try await count in group { wrong += count }
            #expect(wrong == 0)
        }
        #expect(try await cache.usage().count <= 50)
        // Every odd key's value is a file: exactly one file per present odd key, no leftovers.
        var oddKeysPresent = 0
        for key in stride(from: 1, to: 50, by: 2) where try await cache.contains(key: "k\(key)") {
            oddKeysPresent += 1
        }
        #expect(scratch.dataFiles().count == oddKeysPresent)
    }
}
