import Foundation
import Logging
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

/// The order copies leave the levels of a tiered cache: disk first, then memory, so that a read
/// between the two removals can never promote a stale disk copy back into memory. The memory
/// level's eviction callback runs at the moment a memory copy goes; it looks at the disk then.
@Suite("CacheLevels: disk first, then memory")
struct CacheLevelsTests {
    /// What the disk held for each key at the moment its memory copy went.
    final class Witness: Sendable {
        let seen = Mutex<[String: Bool]>([:])
        func record(_ key: String, diskStillHadIt: Bool) { seen.withLock { $0[key] = diskStillHadIt } }
        var snapshot: [String: Bool] { seen.withLock { $0 } }
    }

    struct Fixture {
        let scratch: TemporaryDirectory
        let disk: DiskCache
        let memory: MemoryCache<String, String>
        let witness = Witness()
        var levels: CacheLevels<String> { CacheLevels(memory: memory, disk: disk, logger: Logger(label: "test")) }

        init(_ name: String = #function) throws {
            scratch = try TemporaryDirectory(name)
            let disk = try DiskCache(directory: scratch.url.appending(path: "cache"))
            let witness = witness
            var configuration = MemoryCache<String, String>.Configuration(name: "levels")
            configuration.memoryPressureSource = nil
            configuration.onEviction = { key, _, reason in
                guard reason == .explicit else { return }
                witness.record(key, diskStillHadIt: (try? disk.data(forKey: key)) != nil)
            }
            memory = try MemoryCache(configuration: configuration)
            self.disk = disk
        }

        /// Puts `keys` in both levels.
        func fill(_ keys: [String]) throws {
            for key in keys {
                try disk.setData(Data(key.utf8), forKey: key)
                memory.setValue(key, forKey: key)
            }
        }
    }

    @Test("a removal: the disk copy is gone before the memory copy goes")
    func removal() async throws {
        let fixture = try Fixture()
        try fixture.fill(["a"])
        try await fixture.levels.remove("a")
        #expect(fixture.witness.snapshot == ["a": false])
        #expect(fixture.memory.value(forKey: "a") == nil)
        await #expect(try fixture.disk.data(forKey: "a") == nil)
    }

    @Test("an invalidation of a key and of a prefix: disk first, other keys untouched")
    func invalidations() async throws {
        let fixture = try Fixture()
        try fixture.fill(["k", "ban/1", "ban/2", "keep"])
        await fixture.levels.drop("k", reason: "an invalidated disk copy")
        await fixture.levels.drop(keysWithPrefix: "ban/", reason: "banned disk copies")
        #expect(fixture.witness.snapshot == ["k": false, "ban/1": false, "ban/2": false])
        #expect(fixture.memory.value(forKey: "keep") == "keep")
        await #expect(try fixture.disk.data(forKey: "keep") == Data("keep".utf8))
    }

    @Test(
        "a ban drops the same keys from memory and disk, the keys a waiting ban covers: UTF-8 byte prefixes, not canonical equivalence",
        arguments: ["e\u{301}", "K", "cafe", ""]
    )
    func banAgreesAcrossLevels(prefix: String) async throws {
        let fixture = try Fixture("banAgreesAcrossLevels-\(prefix.utf8.count)")
        // No two of them canonically equivalent: memory would take them for one key.
        let keys = ["\u{E9}x", "\u{212A}ey", "cafe\u{301}s", "Kelvin", "e\u{301}t", "plain"]
        try fixture.fill(keys)
        await fixture.levels.drop(keysWithPrefix: prefix, reason: "test")
        let waiting = PendingSharedWrites(limit: 10)
        _ = waiting.record(.ban, forKey: prefix)
        for key in keys {
            let inMemory = fixture.memory.value(forKey: key) != nil
            let onDisk = try await fixture.disk.data(forKey: key) != nil
            #expect(
                inMemory == onDisk,
                "\(key.unicodeScalars.map(\.value)) under \(prefix.unicodeScalars.map(\.value))"
            )
            #expect(
                (waiting.change(forKey: key) == .ban) == !onDisk,
                "\(key.unicodeScalars.map(\.value)) under \(prefix.unicodeScalars.map(\.value))"
            )
            #expect(onDisk == !key.utf8.starts(with: prefix.utf8))
        }
    }

    @Test("an invalidation that keeps disk copies (invalidatesDisk off) drops memory only")
    func memoryOnly() async throws {
        let fixture = try Fixture()
        try fixture.fill(["k"])
        await fixture.levels.drop("k", includingDisk: false, reason: "unused")
        #expect(fixture.witness.snapshot == ["k": true])
        await #expect(try fixture.disk.data(forKey: "k") == Data("k".utf8))
    }

    @Test("HybridCache's removeValue and an invalidation from another node keep the order")
    func hybridCache() async throws {
        let fixture = try Fixture()
        let cache = HybridCache(memory: fixture.memory, disk: fixture.disk, serializer: StringSerializer())
        try await cache.setValue("one", forKey: "one")
        try await cache.setValue("two", forKey: "two")
        try await cache.removeValue(forKey: "one")
        await cache.apply(.key("two"))
        #expect(fixture.witness.snapshot == ["one": false, "two": false])
    }

    @Test("a read racing removals never leaves a removed value in memory")
    func racingReads() async throws {
        let fixture = try Fixture()
        let cache = HybridCache(memory: fixture.memory, disk: fixture.disk, serializer: StringSerializer())
        for round in 0..<200 {
            let key = "race-\(round)"
            try await cache.setValue("v", forKey: key)
            _ = cache.memory.removeValue(forKey: key)  // the next read goes to disk
            async let read = cache.value(forKey: key)
            try await cache.removeValue(forKey: key)
            _ = try await read
            #expect(cache.memory.value(forKey: key) == nil, "round \(round)")
        }
    }

    @Test("a read begun before memory is dropped wholesale (missed invalidations) keeps nothing in memory")
    func promotionLosesToDropMemory() throws {
        let fixture = try Fixture()
        try fixture.disk.setData(Data("old".utf8), forKey: "k")
        let levels = fixture.levels
        let read = levels.beginRead()  // the read finds the disk copy…
        levels.dropMemory()  // …then another node's `.all` drops memory
        #expect(!levels.keepInMemory("old", forKey: "k", cost: 3, readAt: read))
        #expect(fixture.memory.value(forKey: "k") == nil)
        #expect(try fixture.disk.data(forKey: "k") == Data("old".utf8), "disk copies stay, to be confirmed")
    }

    @Test("a read that found the older disk copy before a memory-only write keeps nothing in memory")
    func promotionLosesToMemoryOnlyWrite() async throws {
        let fixture = try Fixture()
        try await fixture.disk.setData(Data("old".utf8), forKey: "k")
        let levels = fixture.levels
        let read = levels.beginRead()  // the read finds the old disk copy…
        try await levels.write("new", forKey: "k", cost: 3) {  // …then a memory-only write lands
            _ = try await fixture.disk.removeData(forKey: "k")
        }
        #expect(!levels.keepInMemory("old", forKey: "k", cost: 3, readAt: read))
        #expect(fixture.memory.value(forKey: "k") == "new")
        #expect(try await fixture.disk.data(forKey: "k") == nil)
    }

    @Test("a read that found the older disk copy before a disk-only write keeps nothing in memory")
    func promotionLosesToDiskOnlyWrite() async throws {
        let fixture = try Fixture()
        try fixture.fill(["k"])
        let levels = fixture.levels
        let read = levels.beginRead()
        try await levels.write("new", forKey: "k", cost: 3, keepsInMemory: false) {
            try await fixture.disk.setData(Data("new".utf8), forKey: "k")
        }
        #expect(fixture.memory.value(forKey: "k") == nil, "the older memory copy went")
        #expect(fixture.witness.snapshot == ["k": true], "after the new disk copy landed")
        #expect(!levels.keepInMemory("k", forKey: "k", cost: 1, readAt: read))
        #expect(fixture.memory.value(forKey: "k") == nil)
    }

    @Test("removal from one level: memory only keeps disk, disk only keeps memory and beats a racing read")
    func removalFromOneLevel() async throws {
        let fixture = try Fixture()
        try fixture.fill(["a", "b"])
        let levels = fixture.levels
        levels.removeFromMemory("a")
        #expect(fixture.memory.value(forKey: "a") == nil)
        #expect(try await fixture.disk.data(forKey: "a") != nil)

        _ = fixture.memory.removeValue(forKey: "b")
        let read = levels.beginRead()  // the read finds b's disk copy…
        try await levels.removeFromDisk("b")  // …which then goes
        #expect(try await fixture.disk.data(forKey: "b") == nil)
        #expect(!levels.keepInMemory("b", forKey: "b", cost: 1, readAt: read))
        try fixture.fill(["c"])
        try await levels.removeFromDisk("c")
        #expect(fixture.memory.value(forKey: "c") == "c")
    }

    @Test("reads racing a removal never leave the removed value in memory, however slow their decoding")
    func racingSlowReads() async throws {
        let fixture = try Fixture()
        // A read that marks after the removal began but reads the disk copy before it is gone
        // must not keep it: the slow decoder lets the removal finish in between.
        let cache = HybridCache(memory: fixture.memory, disk: fixture.disk, serializer: SlowDecoding())
        var kept: [Int] = []
        for round in 0..<100 {
            let key = "remove-race-\(round)"
            try await cache.setValue("v", forKey: key)
            _ = cache.memory.removeValue(forKey: key)  // the next read goes to disk
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.removeValue(forKey: key) }
                for _ in 0..<4 { group.addTask { _ = try await cache.value(forKey: key) } }
                try await group.waitForAll()
            }
            if cache.memory.value(forKey: key) != nil { kept.append(round) }
        }
        #expect(kept.isEmpty, "rounds that kept the removed value in memory: \(kept)")
    }

    @Test("a read racing a write never leaves the older value in memory")
    func racingWrites() async throws {
        let fixture = try Fixture()
        // Decoding takes a while, as a large value's would: a write can land in the meantime.
        let cache = HybridCache(memory: fixture.memory, disk: fixture.disk, serializer: SlowDecoding())
        var stale: [Int] = []
        for round in 0..<100 {
            let key = "write-race-\(round)"
            try await cache.setValue("old", forKey: key)
            _ = cache.memory.removeValue(forKey: key)  // the next read goes to disk
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { _ = try await cache.value(forKey: key) } }
                group.addTask { try await cache.setValue("new", forKey: key) }
                try await group.waitForAll()
            }
            if cache.memory.value(forKey: key) == "old" { stale.append(round) }
        }
        #expect(stale.isEmpty, "rounds that kept the older value in memory: \(stale)")
    }

    /// UTF-8 text whose decoding takes a millisecond.
    struct SlowDecoding: CacheSerializer {
        func encode(_ value: String) throws -> Data { Data(value.utf8) }
        func decode(_ data: Data) throws -> String {
            usleep(1_000)
            return String(decoding: data, as: UTF8.self)
        }
    }
}
