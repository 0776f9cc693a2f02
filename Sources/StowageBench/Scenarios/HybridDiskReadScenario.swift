import Foundation
import StowageCache
import StowageProcessSupport
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
/// Baselines, on the same cache and keys: the same steps written by hand — memory lookup,
/// `DiskCache.data(forKey:)`, decode, `MemoryCache.setValue` — with no shared-level checks
/// (`by-hand-async`), and the same with `data` on the caller's thread
/// (`by-hand-blocking`: what the hop to the blocking-I/O queue costs).
/// `ok` means every read returned the 1 KiB that was stored. Without redis-server the scenario
/// runs with no shared level and says so.
struct HybridDiskReadScenario: Scenario {
    var name: String { "hybrid-cache.disk-read-1KiB" }
    let keyCount = 5_000
    let valueSize = 1_024

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        // On Swift's cooperative pool, where server code calls from; not on the main actor.
        try await Task.detached { try await self.measure(context) }.value
    }

    private func measure(_ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "hybrid-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let server = RedisServerProcess.isAvailable ? try await RedisServerProcess.start() : nil
        defer { server?.remove() }
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

        // 0: HybridCache; 1: by hand, async; 2: by hand, blocking (no hop to the I/O queue).
        var times: [[Double]] = [[], [], []]
        var ok = true
        let repetitions = max(3, min(context.iterations, 7))
        for repetition in 0..<repetitions {
            let order = repetition.isMultiple(of: 2) ? [0, 1, 2] : [2, 1, 0]
            for contender in order {
                let clock = ContinuousClock()
                let start = clock.now
                var matched = 0
                for key in keys {
                    let read: Data?
                    switch contender {
                    case 0:
                        read = try await cache.value(forKey: key)
                    case 1:
                        read = try await handWritten(key, cache: cache, serializer: serializer) {
                            try await cache.disk.data(forKey: $0)
                        }
                    default:
                        read = try await handWritten(key, cache: cache, serializer: serializer) {
                            try cache.disk.data(forKey: $0)
                        }
                    }
                    if read?.count == valueSize { matched += 1 }
                }
                let elapsed = clock.now - start
                times[contender].append(
                    (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
                        / Double(keyCount)
                )
                ok = ok && matched == keyCount
            }
        }
        try await cache.close()
        let medians = times.map { $0.sorted()[$0.count / 2] }
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: medians[0],
            baselines: ["by-hand-async": medians[1], "by-hand-blocking": medians[2]],
            ok: ok,
            notes: "\(keyCount) keys of \(valueSize) B read in turn through a one-entry memory level, "
                + (tier == nil ? "no shared level (redis-server not installed)" : "Redis shared level attached")
                + "; by hand = memory lookup, DiskCache.data (async, or data on the caller's thread), "
                + "decode, memory set"
        )
    }

    /// A two-level read as code without HybridCache writes it: memory, else disk then memory.
    private func handWritten(
        _ key: String,
        cache: HybridCache<Data>,
        serializer: DataSerializer,
        read: (String) async throws -> Data?
    ) async throws -> Data? {
        if let value = cache.memory.value(forKey: key) { return value }
        guard let value = try await read(key).map({ try serializer.decode($0) }) else { return nil }
        cache.memory.setValue(value, forKey: key, cost: value.count)
        return value
    }
}
