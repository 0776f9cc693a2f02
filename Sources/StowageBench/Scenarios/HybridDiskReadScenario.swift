import Foundation
import StowageCache
import StowageRedis
import StowageSharedTier

/// `hybrid-cache.disk-read-1KiB`: `HybridCache.value(forKey:)` served by the disk level, with a
/// Redis shared level attached; nanoseconds per read.
///
/// Memory holds one entry, so every read of the next key misses memory, reads disk and
/// promotes the value: the path a disk hit takes, including the shared level's checks on it
/// (the invalidation generation around the promotion, the pending-writes lookup and the
/// invalidation-horizon comparison; the copies are current, so none asks Redis).
///
/// Baseline, on the same cache and keys: the same steps written by hand —
/// `DiskCache.data(forKey:)`, decode, `MemoryCache.setValue` — with no shared-level checks.
/// `ok` means every read returned the 1 KiB that was stored. Without redis-server the scenario
/// runs with no shared level and says so.
struct HybridDiskReadScenario: Scenario {
    var name: String { "hybrid-cache.disk-read-1KiB" }
    let keyCount = 5_000
    let valueSize = 1_024

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "hybrid-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let server = RedisBenchServer.isAvailable ? try await RedisBenchServer() : nil
        defer { server?.stop() }
        let tier = try server.map { try RedisSharedTier(client: RedisClient(url: $0.url), namespace: "bench-hybrid") }
        defer { if let tier { Task { await tier.shutdown() } } }

        let cache = HybridCache(
            memory: try MemoryCache<String, Data>(configuration: .init(name: "bench-hybrid", countLimit: 1)),
            disk: try DiskCache(directory: root.appending(path: "disk"), configuration: .init(name: "bench-hybrid")),
            serializer: DataSerializer(),
            shared: tier
        )
        let keys = (0..<keyCount).map { "https://example.com/feeds/\($0).json" }
        let value = Data((0..<valueSize).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        for key in keys { try await cache.setValue(value, forKey: key) }
        let serializer = DataSerializer()

        var stowageTimes: [Double] = []
        var baselineTimes: [Double] = []
        var ok = true
        let repetitions = max(3, min(context.iterations, 7))
        for repetition in 0..<repetitions {
            for contender in repetition.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                let clock = ContinuousClock()
                let start = clock.now
                var matched = 0
                for key in keys {
                    let read: Data?
                    if contender == 0 {
                        read = try await cache.value(forKey: key)
                    } else {
                        read = try await cache.disk.data(forKey: key).map { try serializer.decode($0) }
                        if let read { cache.memory.setValue(read, forKey: key, cost: read.count) }
                    }
                    if read?.count == valueSize { matched += 1 }
                }
                let elapsed = clock.now - start
                let nanoseconds =
                    (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
                    / Double(keyCount)
                if contender == 0 {
                    stowageTimes.append(nanoseconds)
                    ok = ok && matched == keyCount
                } else {
                    baselineTimes.append(nanoseconds)
                }
            }
        }
        return ScenarioResult(
            name: name, unit: "ns/op",
            stowage: stowageTimes.sorted()[stowageTimes.count / 2],
            baselines: ["disk-data+decode+memory-set": baselineTimes.sorted()[baselineTimes.count / 2]],
            ok: ok,
            notes: "\(keyCount) keys of \(valueSize) B read in turn through a one-entry memory level, "
                + (tier == nil ? "no shared level (redis-server not installed)" : "Redis shared level attached")
        )
    }
}
