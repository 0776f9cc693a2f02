import Foundation
import Metrics
import MetricsTestKit
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// The test process's metrics backend: swift-metrics takes one bootstrap per process, so every
/// test that reads metrics shares it (and names its caches uniquely).
let testMetrics: TestMetrics = {
    let metrics = TestMetrics()
    MetricsSystem.bootstrap(metrics)
    return metrics
}()

/// Byte counters beside hits and misses, readable by code and exported through swift-metrics.
@Suite("cache metrics")
struct CacheMetricsTests {
    private func total(_ label: String, cache: String, tier: String) throws -> Int64 {
        try testMetrics.expectCounter(label, [("cache", cache), ("tier", tier)]).totalValue
    }

    @Test("a disk cache counts bytes read, written and evicted, and a metrics backend sees them")
    func diskBytes() throws {
        _ = testMetrics
        let name = "metrics-disk-\(UUID().uuidString.prefix(8))"
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        var configuration = DiskCache.Configuration(name: name)
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        try cache.setData(Data(count: 1_000), forKey: "small")
        try cache.setData(Data(count: 30_000), forKey: "file")
        try cache.setData(Data(count: 500), forKey: "short-lived", timeToLive: .seconds(5))
        _ = try cache.data(forKey: "small")
        _ = try cache.data(forKey: "file")
        _ = try cache.data(forKey: "missing")
        clock.advance(by: .seconds(60))
        try cache.trim()

        let statistics = cache.statistics
        #expect(statistics.bytesWritten == 31_500)
        #expect(statistics.bytesRead == 31_000)
        #expect(statistics.bytesEvicted == 500)
        #expect(statistics.hits == 2 && statistics.misses == 1)
        #expect(try total("stowage_cache_bytes_written_total", cache: name, tier: "disk") == 31_500)
        #expect(try total("stowage_cache_bytes_read_total", cache: name, tier: "disk") == 31_000)
        #expect(try total("stowage_cache_bytes_evicted_total", cache: name, tier: "disk") == 500)
        #expect(try total("stowage_cache_hits_total", cache: name, tier: "disk") == 2)
    }

    @Test("a memory cache counts its entries' costs as bytes")
    func memoryBytes() throws {
        _ = testMetrics
        let name = "metrics-memory-\(UUID().uuidString.prefix(8))"
        let cache = try MemoryCache<String, String>(configuration: .init(name: name, costLimit: 1_000))
        cache.setValue("a", forKey: "a", cost: 600)
        _ = cache.value(forKey: "a")
        cache.setValue("b", forKey: "b", cost: 600)  // evicts a
        #expect(cache.statistics.bytesWritten == 1_200)
        #expect(cache.statistics.bytesRead == 600)
        #expect(cache.statistics.bytesEvicted == 600)
        #expect(try total("stowage_cache_bytes_evicted_total", cache: name, tier: "memory") == 600)
    }
}
