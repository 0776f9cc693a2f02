import Foundation
import StowageCache
import StowageCore

/// `hybrid-cache.memory-hit`: `HybridCache.value(forKey:)` served by the memory tier;
/// nanoseconds per read.
///
/// Every read first loads the disk cache's generation from shared memory (a clear or wipe by any
/// handle in any process empties the memory tier; see `StoreGeneration`). Baseline, on the same
/// keys and values: the memory tier alone (`MemoryCache.value(forKey:)`, the floor for a read
/// from memory). The notes give the generation check alone (`GenerationWatch.check`, measured in
/// a loop of its own). `ok` means every read returned the value stored.
struct HybridMemoryHitScenario: Scenario {
    var name: String { "hybrid-cache.memory-hit" }
    let keyCount = 10_000
    let rounds = 20

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        try await Task.detached { try await self.measure(context) }.value
    }

    private func measure(_ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "hybrid-memory-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = HybridCache(
            memory: try MemoryCache<String, Data>(configuration: .init(name: "bench-hybrid-memory")),
            disk: try DiskCache(
                directory: root.appending(path: "disk"),
                configuration: .init(name: "bench-hybrid-memory")
            ),
            serializer: DataSerializer()
        )
        let keys = (0..<keyCount).map { "https://example.com/feeds/\($0).json" }
        let value = Data(repeating: 7, count: 256)
        for key in keys { try await cache.setValue(value, forKey: key) }
        let watch = GenerationWatch(cache.disk.storeGeneration)
        let reads = Double(keyCount * rounds)

        // 0: HybridCache; 1: the memory tier alone.
        var times: [[Double]] = [[], []]
        var ok = true
        for repetition in 0..<max(3, context.iterations) {
            for contender in repetition.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                let clock = ContinuousClock()
                let start = clock.now
                var matched = 0
                for _ in 0..<rounds {
                    for key in keys {
                        let read = contender == 0 ? try await cache.value(forKey: key) : cache.memory.value(forKey: key)
                        if read?.count == value.count { matched += 1 }
                    }
                }
                times[contender].append(Self.nanoseconds(clock.now - start) / reads)
                ok = ok && matched == keyCount * rounds
            }
        }
        var checks: [Double] = []
        var emptied = 0
        for _ in 0..<max(3, context.iterations) {
            let clock = ContinuousClock()
            let start = clock.now
            var sum: UInt64 = 0
            for _ in 0..<10_000_000 { sum &+= watch.check { emptied += 1 } }
            checks.append(Self.nanoseconds(clock.now - start) / 10_000_000)
            ok = ok && sum == 0
        }
        try await cache.close()
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: median(times[0]),
            baselines: ["memory-tier-alone": median(times[1])],
            ok: ok && emptied == 0,
            notes: "\(keyCount) keys of 256 B, all in memory, read \(rounds) times each from a Task; the "
                + "generation check alone: \(BenchContext.format(median(checks))) ns"
        )
    }

    private static func nanoseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
    }
}
