import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// `DiskCache.indexedValueWithoutWaiting(forKey:)`, the read a server's event loop makes: a sound
/// inline value or nothing, and nothing counted or written for what it leaves to the ordinary read.
@Suite("DiskCache read without waiting")
struct DiskCacheReadWithoutWaitingTests {
    @Test(
        "an inline value is read and counted as a hit; a miss, a file value and an expired value are nil and uncounted"
    )
    func answersOnlyWhatTheIndexHolds() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        var configuration = DiskCache.Configuration(name: "test")
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        let small = Data("inline".utf8)
        let large = Data(repeating: 7, count: configuration.inlineThreshold + 1)
        try cache.setData(small, forKey: "small")
        try cache.setData(large, forKey: "large")
        try cache.setData(small, forKey: "brief", timeToLive: .seconds(10))

        #expect(cache.indexedValueWithoutWaiting(forKey: "small")?.data == small)
        #expect(cache.indexedValueWithoutWaiting(forKey: "large") == nil, "a file read is not made")
        #expect(cache.indexedValueWithoutWaiting(forKey: "missing") == nil)
        #expect(cache.indexedValueWithoutWaiting(forKey: "nul\u{0}key") == nil)
        clock.advance(by: .seconds(11))
        #expect(cache.indexedValueWithoutWaiting(forKey: "brief") == nil)
        #expect(cache.statistics.hits == 1)
        #expect(cache.statistics.misses == 0, "left to the ordinary read, which counts it")
        // The ordinary read answers what it left.
        #expect(try cache.data(forKey: "large") == large)
        #expect(try cache.data(forKey: "brief") == nil)
        try cache.close()
        #expect(cache.indexedValueWithoutWaiting(forKey: "small") == nil, "a closed cache answers nothing")
    }

    @Test("an inline value garbled in place is nil, left for the ordinary read to count and remove")
    func garbledInlineIsLeft() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let value = Data((0..<200).map { UInt8($0) })
        try cache.setData(value, forKey: "k")
        try cache.flush()
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).write { db in
            var bytes = [UInt8](value)
            bytes[50] ^= 0x01
            try db.execute(sql: "UPDATE entry SET inline = ? WHERE key = ?", arguments: [Data(bytes), "k"])
        }
        #expect(cache.indexedValueWithoutWaiting(forKey: "k") == nil)
        #expect(cache.statistics.damaged == 0)
        #expect(try cache.data(forKey: "k") == nil)
        #expect(cache.statistics.damaged == 1)
        #expect(try cache.contains(key: "k") == false)
        try cache.close()
    }

    @Test("a value removed by another handle, or cleared with the whole cache, is not read")
    func removalsByAnotherHandleAreSeen() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        try await cache.setData(Data("a".utf8), forKey: "a")
        try await cache.setData(Data("b".utf8), forKey: "b")
        try await cache.flush()
        let other = try DiskCache(directory: directory)
        #expect(try await other.removeData(forKey: "a"))
        #expect(cache.indexedValueWithoutWaiting(forKey: "a") == nil)
        #expect(cache.indexedValueWithoutWaiting(forKey: "b")?.data == Data("b".utf8))
        _ = try await other.removeAll()
        #expect(cache.indexedValueWithoutWaiting(forKey: "b") == nil)
        try await other.close()
        try await cache.close()
    }
}
