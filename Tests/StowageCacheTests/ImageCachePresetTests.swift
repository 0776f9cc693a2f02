import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@Suite("Image cache preset and memory-pressure responses")
struct ImageCachePresetTests {
    @Test("a memory warning empties the memory level under the image preset; disk keeps every value")
    func warningEmptiesImageMemory() async throws {
        let scratch = try TemporaryDirectory()
        let source = MemoryPressureSource()  // not the process-wide one: tests run in parallel
        var memory = MemoryCache<String, Data>.Configuration.imageCache()
        memory.memoryPressureSource = source
        let cache = HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: .imageCache()),
            serializer: DataSerializer(),
            configuration: .imageCache { $0.count * 4 }
        )
        for number in 0..<10 {
            try await cache.setValue(Data(repeating: UInt8(number), count: 100), forKey: "image-\(number)")
        }
        #expect(cache.memory.count == 10)

        source.notify(.warning)
        #expect(cache.memory.count == 0)
        #expect(cache.memory.statistics.evictions == 10)
        #expect(try await cache.value(forKey: "image-3") == Data(repeating: 3, count: 100))
    }

    @Test("the general defaults stay: a warning halves, critical empties, no age limit")
    func generalDefaultsUnchanged() {
        #expect(MemoryCache<String, Int>.Configuration().memoryPressureResponse == .default)
        #expect(MemoryPressureResponse.default == MemoryPressureResponse(warning: .halve, critical: .empty))
        let disk = DiskCache.Configuration()
        #expect(disk.maximumAge == nil)
        #expect(disk.ageBasis == .accessed)
        #expect(disk.sizeAccounting == .logical)
    }

    @Test("image preset: a value a week past its last write is purged, even if read since")
    func weekOldPurged() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        var configuration = DiskCache.Configuration.imageCache()
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        try await cache.setData(Data("old".utf8), forKey: "old")
        clock.advance(by: .seconds(3 * 24 * 3600))
        try await cache.setData(Data("recent".utf8), forKey: "recent")
        clock.advance(by: .seconds(3 * 24 * 3600))
        #expect(try await cache.data(forKey: "old") != nil)  // read on day 6

        clock.advance(by: .seconds(24 * 3600 + 1))  // a week and a second after "old" was written
        let report = try await cache.trim()
        #expect(report.expired == 1)
        #expect(try await !cache.contains(key: "old"))
        #expect(try await cache.contains(key: "recent"))
    }

    @Test("image preset: over the cap, the trim leaves half the cap, least recently used first")
    func trimToHalfTheCap() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        var configuration = DiskCache.Configuration.imageCache(sizeLimit: ByteCount(100_000))
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        // 21 × 5 000 bytes: the last write takes the cache 5 000 bytes over its cap.
        for number in 0..<21 {
            clock.advance(by: .seconds(1))
            try await cache.setData(Data(repeating: UInt8(number), count: 5_000), forKey: "image-\(number)")
        }
        try await cache.trim()  // after the background trim the write scheduled, if it has not run
        let usage = try await cache.usage()
        #expect(usage.size == ByteCount(50_000))
        #expect(usage.count == 10)
        #expect(try await !cache.contains(key: "image-10"))
        #expect(try await cache.contains(key: "image-11"))
    }
}
