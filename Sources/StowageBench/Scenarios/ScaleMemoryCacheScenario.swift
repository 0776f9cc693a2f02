import CStowageBenchShims
import Foundation
import StowageCache
import Synchronization

/// `scale.memory-cache.*`: a ``MemoryCache`` of n `Int` → `Int` entries (the sizes of
/// `STOWAGE_BENCH_SCALE_SIZES`, 10^7 included when listed; default 10^4, the smoke run) against
/// a `Mutex<[Int: Int]>`, the floor for a thread-safe map, in the same run.
///
/// Each repetition fills a fresh store with keys 0..<n, then reads every key back in a
/// scattered order (``ScaleScenario/pick(_:_:offset:)``, a permutation), Stowage and the
/// dictionary taking turns, the first alternating; medians of 3.
/// - `set-<n>`: ns per set while filling (growth included for both);
/// - `get-<n>`: ns per get; `ok` means every get hit and returned the value set;
/// - `bytes-per-entry-<n>`: the bytes the full store holds allocated, divided by n: the
///   malloc heap in use (glibc's `mallinfo2`, ``cstowage_bench_heap_in_use()``) after the fill
///   minus before it. That counts what each structure reserved, growth room included, whether
///   touched yet or not, and nothing glibc keeps cached from the other contender's freed blocks
///   (which a resident-set delta would count or not depending on who ran first); the resident
///   set's growth over the fill is in the notes beside it.
///
/// No limits and no time-to-live, so nothing is evicted or expires and no cost is kept: the
/// same work the dictionary does, plus the cache's recency order.
struct ScaleMemoryCacheScenario: ScenarioFamily {
    let name = "scale.memory-cache"

    func results(_ context: BenchContext) async throws -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for size in ScaleScenario.sizes() {
            BenchContext.progress("scale.memory-cache: \(size) entries")
            results += try measure(size: size, context)
        }
        return results
    }

    /// One contender's figures for one fill and read-back.
    private struct Figures {
        var setSeconds: Double
        var getSeconds: Double
        var heapBytes: Int64
        var residentBytes: Int64
        var hits: Int
    }

    private static func value(for key: Int) -> Int { key &* 31 &+ 7 }

    private func measure(size: Int, _ context: BenchContext) throws -> [ScenarioResult] {
        var stowage: [Figures] = []
        var dictionary: [Figures] = []
        for repetition in 0..<min(context.iterations, 3) {
            for contender in repetition.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                if contender == 0 {
                    stowage.append(try Self.stowage(size))
                } else {
                    dictionary.append(Self.dictionary(size))
                }
            }
        }
        let ok = stowage.allSatisfy { $0.hits == size } && dictionary.allSatisfy { $0.hits == size }
        let label = ScaleScenario.label(size)
        let load = ScaleScenario.loadAverage()
        func perEntry(_ figures: [Figures], _ path: KeyPath<Figures, Int64>) -> Double {
            median(figures.map { Double($0[keyPath: path]) / Double(size) })
        }
        let heapNote =
            "resident set growth per entry: stowage \(BenchContext.format(perEntry(stowage, \.residentBytes))) B, "
            + "dictionary+mutex \(BenchContext.format(perEntry(dictionary, \.residentBytes))) B"
        return [
            ScenarioResult(
                name: "\(name).set-\(label)",
                unit: "ns/op",
                stowage: median(stowage.map(\.setSeconds)) * 1e9 / Double(size),
                baselines: ["dictionary+mutex": median(dictionary.map(\.setSeconds)) * 1e9 / Double(size)],
                ok: ok,
                notes: "\(size) sets of Int keys 0..<n into a fresh store (growth included); median of "
                    + "\(stowage.count), order alternating; \(load)"
            ),
            ScenarioResult(
                name: "\(name).get-\(label)",
                unit: "ns/op",
                stowage: median(stowage.map(\.getSeconds)) * 1e9 / Double(size),
                baselines: ["dictionary+mutex": median(dictionary.map(\.getSeconds)) * 1e9 / Double(size)],
                ok: ok,
                notes:
                    "\(size) gets of every key in a scattered order; hits: stowage \(stowage.map(\.hits).min() ?? 0), "
                    + "dictionary+mutex \(dictionary.map(\.hits).min() ?? 0) of \(size); median of \(stowage.count); \(load)"
            ),
            ScenarioResult(
                name: "\(name).bytes-per-entry-\(label)",
                unit: "B",
                stowage: perEntry(stowage, \.heapBytes),
                baselines: ["dictionary+mutex": perEntry(dictionary, \.heapBytes)],
                ok: ok && stowage.allSatisfy { $0.heapBytes > 0 },
                notes: "malloc heap in use after the fill minus before (glibc mallinfo2: uordblks + hblkhd), per "
                    + "entry; \(heapNote); \(load)"
            ),
        ]
    }

    private static func stowage(_ size: Int) throws -> Figures {
        var configuration = MemoryCache<Int, Int>.Configuration(name: "scale")
        configuration.memoryPressureSource = nil
        let heapBefore = cstowage_bench_heap_in_use()
        let residentBefore = residentBytes()
        let cache = try MemoryCache<Int, Int>(configuration: configuration)
        let clock = ContinuousClock()
        var start = clock.now
        for key in 0..<size { cache.setValue(value(for: key), forKey: key) }
        let setSeconds = Subprocess.seconds(clock.now - start)
        let heapBytes = cstowage_bench_heap_in_use() - heapBefore
        let resident = residentBytes() - residentBefore
        var hits = 0
        start = clock.now
        for j in 0..<size {
            let key = ScaleScenario.pick(j, size)
            if cache.value(forKey: key) == value(for: key) { hits += 1 }
        }
        let getSeconds = Subprocess.seconds(clock.now - start)
        return Figures(
            setSeconds: setSeconds,
            getSeconds: getSeconds,
            heapBytes: heapBytes,
            residentBytes: resident,
            hits: hits
        )
    }

    private static func dictionary(_ size: Int) -> Figures {
        let heapBefore = cstowage_bench_heap_in_use()
        let residentBefore = residentBytes()
        let map = Mutex<[Int: Int]>([:])
        let clock = ContinuousClock()
        var start = clock.now
        for key in 0..<size { map.withLock { $0[key] = value(for: key) } }
        let setSeconds = Subprocess.seconds(clock.now - start)
        let heapBytes = cstowage_bench_heap_in_use() - heapBefore
        let resident = residentBytes() - residentBefore
        var hits = 0
        start = clock.now
        for j in 0..<size {
            let key = ScaleScenario.pick(j, size)
            if map.withLock({ $0[key] }) == value(for: key) { hits += 1 }
        }
        let getSeconds = Subprocess.seconds(clock.now - start)
        return Figures(
            setSeconds: setSeconds,
            getSeconds: getSeconds,
            heapBytes: heapBytes,
            residentBytes: resident,
            hits: hits
        )
    }

    /// The process's resident set (`/proc/self/statm`, second field, in pages, on Linux); 0 where
    /// there is none (elsewhere the figure is not recorded).
    private static func residentBytes() -> Int64 {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int64($0) })
        else { return 0 }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return 0
        #endif
    }

    /// Goals from issue 46, by result name.
    static let targets: [String: [BenchTarget]] = {
        var targets: [String: [BenchTarget]] = [:]
        for label in ["1e4", "1e5", "1e6", "1e7"] {
            for operation in ["set", "get"] {
                targets["scale.memory-cache.\(operation)-\(label)"] = [
                    .ratio(atMost: 2, against: "dictionary+mutex", "within 2x a dictionary")
                ]
            }
            targets["scale.memory-cache.bytes-per-entry-\(label)"] = [
                .ratio(atMost: 2, against: "dictionary+mutex", "within 2x a dictionary's bytes per entry")
            ]
        }
        return targets
    }()
}
