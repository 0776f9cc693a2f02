import Foundation
import StowageCache
import Synchronization

/// `memory-cache.set-get`: 100,000 sets of distinct `Int` keys into an empty store, then
/// 100,000 gets of the same keys; nanoseconds per operation (a set or a get, so 200,000
/// operations per repetition).
///
/// Baselines in the same run (Stowage and the dictionary interleaved, NSCache after them):
/// - `dictionary+mutex`: a `Mutex<[Int: Int]>` from Synchronization — the floor for a
///   thread-safe map (no recency, no limits, no statistics).
/// - `NSCache`: Foundation's `NSCache` with `NSNumber` keys and a boxed value.
///
/// No limits are set, so nothing is evicted. `ok` means every Stowage get hit and returned the
/// value set.
struct MemoryCacheScenario: Scenario {
    let name = "memory-cache.set-get"
    let keyCount = 100_000

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let keys = Array(0..<keyCount)
        var stowageTimes: [Double] = []
        var dictionaryTimes: [Double] = []
        var stowageMatches = 0
        var dictionaryMatches = 0
        // Stowage and the dictionary alternate which goes first, so drift in the machine's load
        // hits both alike.
        for iteration in 0..<context.iterations {
            for contender in iteration.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                if contender == 0 {
                    let stowage = try BenchContext.median(1) { try stowageSetGet(keys) }
                    stowageTimes.append(stowage.seconds)
                    stowageMatches = stowage.result
                } else {
                    let dictionary = BenchContext.median(1) { dictionarySetGet(keys) }
                    dictionaryTimes.append(dictionary.seconds)
                    dictionaryMatches = dictionary.result
                }
            }
        }
        // NSCache runs last, on its own: it frees ~400k small objects per repetition, and
        // whoever makes the next large allocation pays for glibc consolidating them
        // (malloc_consolidate), which measured up to 2x on the contender run right after it.
        let foundation = BenchContext.median(context.iterations) { foundationSetGet(keys) }
        let foundationMatches = foundation.result
        let operations = Double(2 * keyCount)
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: median(stowageTimes) * 1e9 / operations,
            baselines: [
                "dictionary+mutex": median(dictionaryTimes) * 1e9 / operations,
                "NSCache": foundation.seconds * 1e9 / operations,
            ],
            ok: stowageMatches == keyCount,
            notes: "\(keyCount) sets then \(keyCount) gets of Int keys into a fresh store; one op = one set or one "
                + "get; matching gets: stowage \(stowageMatches), dictionary+mutex \(dictionaryMatches), "
                + "NSCache \(foundationMatches)"
        )
    }

    private static func value(for key: Int) -> Int { key &* 31 &+ 7 }

    private func stowageSetGet(_ keys: [Int]) throws -> Int {
        var configuration = MemoryCache<Int, Int>.Configuration(name: "bench")
        configuration.memoryPressureSource = nil
        let cache = try MemoryCache<Int, Int>(configuration: configuration)
        for key in keys { cache.setValue(Self.value(for: key), forKey: key) }
        var matches = 0
        for key in keys where cache.value(forKey: key) == Self.value(for: key) { matches += 1 }
        return matches
    }

    private func dictionarySetGet(_ keys: [Int]) -> Int {
        let map = Mutex<[Int: Int]>([:])
        for key in keys { map.withLock { $0[key] = Self.value(for: key) } }
        var matches = 0
        for key in keys where map.withLock({ $0[key] }) == Self.value(for: key) { matches += 1 }
        return matches
    }

    private final class Box {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    private func foundationSetGet(_ keys: [Int]) -> Int {
        let cache = NSCache<NSNumber, Box>()
        for key in keys { cache.setObject(Box(Self.value(for: key)), forKey: NSNumber(value: key)) }
        var matches = 0
        for key in keys where cache.object(forKey: NSNumber(value: key))?.value == Self.value(for: key) {
            matches += 1
        }
        return matches
    }
}
