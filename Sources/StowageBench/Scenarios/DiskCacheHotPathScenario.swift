import Foundation
import StowageCache
import StowageCore
import Synchronization

/// The disk cache's hot path beyond one blocking call at a time:
/// - `disk-cache.get-1KiB-async`: `await data(forKey:)` per key, against the blocking read of the
///   same store (the async tax) and `sqlite-c`.
/// - `disk-cache.set-1KiB-deferred`: sets with ``DiskCache/Durability/deferred(maximumDelay:)``
///   (10 ms batches, the final flush timed too), against the default durable set, `sqlite-c`
///   and python-diskcache.
/// - `disk-cache.set-1KiB-8-writers`: throughput of eight threads setting distinct keys through
///   the group commit, in operations per second (higher is better), against one thread.
/// - `disk-cache.set-1KiB-64-tasks`: the same through `await setData` from 64 tasks (a server's
///   concurrent requests; each waits for its commit without a thread), against one task and
///   against eight threads on the blocking path.
struct DiskCacheHotPathScenario: Scenario {
    enum Operation: String, Sendable { case getAsync = "get-1KiB-async", setDeferred = "set-1KiB-deferred" }
    enum Kind: Sendable {
        case single(Operation)
        case writers(Int)
        case tasks(Int)
    }

    let kind: Kind
    var name: String {
        switch kind {
        case .single(let operation): "disk-cache.\(operation.rawValue)"
        case .writers(let count): "disk-cache.set-1KiB-\(count)-writers"
        case .tasks(let count): "disk-cache.set-1KiB-\(count)-tasks"
        }
    }

    static let all: [any Scenario] = [
        DiskCacheHotPathScenario(kind: .single(.getAsync)), DiskCacheHotPathScenario(kind: .single(.setDeferred)),
        DiskCacheHotPathScenario(kind: .writers(8)), DiskCacheHotPathScenario(kind: .tasks(64)),
    ]

    private let keyCount = 10_000
    private let value = Data((0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 131) })
    private var keys: [String] { (0..<keyCount).map { "https://example.com/assets/\($0).bin" } }

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "disk-cache-hot-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        switch kind {
        case .single(.getAsync): return try await getAsync(context, root: root)
        case .single(.setDeferred): return try setDeferred(context, root: root)
        case .writers(let count): return try await writers(count, context, root: root)
        case .tasks(let count): return try await tasks(count, context, root: root)
        }
    }

    private func open(_ directory: URL, durability: DiskCache.Durability = .processCrash) throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "bench")
        configuration.sizeLimit = nil
        configuration.durability = durability
        return try DiskCache(directory: directory, configuration: configuration)
    }

    private func getAsync(_ context: BenchContext, root: URL) async throws -> ScenarioResult {
        let cache = try open(root.appending(path: "stowage"))
        let floor = try SQLiteCStore(directory: root.appending(path: "sqlite-c"))
        let keys = keys
        for key in keys {
            try await cache.setData(value, forKey: key)
            try floor.set(value, forKey: key)
        }
        var times: [String: [Double]] = [:]
        var matches = 0
        let clock = ContinuousClock()
        // A synchronous function type makes the compiler pick the synchronous overload.
        let readOnThisThread: (String) throws -> Data? = { try cache.data(forKey: $0) }
        for _ in 0..<min(context.iterations, 5) {
            var start = clock.now
            for key in keys where try await cache.data(forKey: key) == value { matches += 1 }
            times["stowage", default: []].append(Subprocess.seconds(clock.now - start))
            start = clock.now
            for key in keys where try readOnThisThread(key) == value { matches += 1 }
            times["blocking", default: []].append(Subprocess.seconds(clock.now - start))
            start = clock.now
            for key in keys where try floor.get(key) == value { matches += 1 }
            times["sqlite-c", default: []].append(Subprocess.seconds(clock.now - start))
        }
        try await cache.close()
        let perOperation = times.mapValues { median($0) / Double(keyCount) * 1e6 }
        return ScenarioResult(
            name: name,
            unit: "us/op",
            stowage: perOperation["stowage"]!,
            baselines: perOperation.filter { $0.key != "stowage" },
            ok: matches == 3 * keyCount * min(context.iterations, 5),
            notes: "await data(forKey:) from one task over \(keyCount) inline 1 KiB values; "
                + "blocking = the synchronous data(forKey:) on the same cache"
        )
    }

    private func setDeferred(_ context: BenchContext, root: URL) throws -> ScenarioResult {
        let keys = keys
        var times: [String: [Double]] = [:]
        var ok = true
        let clock = ContinuousClock()
        let repetitions = min(context.iterations, 5)
        // The first writes fit in the staging (4,096 writes): what a caller pays for a burst.
        let burst = 2_000
        for repetition in 0..<repetitions {
            let deferred = try open(
                root.appending(path: "deferred-\(repetition)"),
                durability: .deferred(maximumDelay: .milliseconds(10))
            )
            var start = clock.now
            for key in keys.prefix(burst) { try deferred.setData(value, forKey: key) }
            times["burst", default: []].append(Subprocess.seconds(clock.now - start) * Double(keyCount) / Double(burst))
            for key in keys.dropFirst(burst) { try deferred.setData(value, forKey: key) }
            let sets = clock.now - start
            try deferred.flush()
            times["stowage", default: []].append(Subprocess.seconds(sets))
            times["with-final-flush", default: []].append(Subprocess.seconds(clock.now - start))
            let readBack = try deferred.data(forKey: keys[keyCount / 2])
            ok = ok && readBack == value
            try deferred.close()

            // The same deferred writes flagged opportunistic: each reads the volume's capacity
            // (one statvfs) first, Apple's storage guide's gate for nice-to-have data.
            let opportunistic = try open(
                root.appending(path: "opportunistic-\(repetition)"),
                durability: .deferred(maximumDelay: .milliseconds(10))
            )
            start = clock.now
            var skipped = 0
            for key in keys where try opportunistic.setData(value, forKey: key, priority: .opportunistic) != .stored {
                skipped += 1
            }
            ok = ok && skipped == 0
            times["opportunistic", default: []].append(Subprocess.seconds(clock.now - start))
            try opportunistic.close()

            let durable = try open(root.appending(path: "durable-\(repetition)"))
            start = clock.now
            for key in keys { try durable.setData(value, forKey: key) }
            times["durable", default: []].append(Subprocess.seconds(clock.now - start))
            try durable.close()

            let floor = try SQLiteCStore(directory: root.appending(path: "sqlite-c-\(repetition)"))
            start = clock.now
            for key in keys { try floor.set(value, forKey: key) }
            times["sqlite-c", default: []].append(Subprocess.seconds(clock.now - start))
        }
        return .diskCache(
            name: name,
            seconds: times,
            keyCount: keyCount,
            pythonDiskCache: PythonDiskCache.microsecondsPerOperation(
                setting: true,
                keyCount: keyCount,
                valueSize: value.count,
                repetitions: repetitions,
                directory: root.appending(path: "python-diskcache")
            ),
            ok: ok,
            notes: "\(keyCount) sets of 1 KiB into a fresh cache: deferred, sustained (10 ms batches committing "
                + "in the background, the writer waiting for them when 4,096 are staged; burst = the first \(burst) "
                + "sets; with-final-flush adds the wait for the last commit; opportunistic = deferred sets that "
                + "each read the volume's capacity first) vs durable (in the WAL on return), "
                + "median of \(repetitions)"
        )
    }

    private func writers(_ count: Int, _ context: BenchContext, root: URL) async throws -> ScenarioResult {
        var rates: [String: [Double]] = [:]
        var ok = true
        let repetitions = min(context.iterations, 5)
        for repetition in 0..<repetitions {
            for threads in [1, count] {
                let (rate, allStored) = try await threadRate(
                    threads,
                    in: root.appending(path: "w\(threads)-\(repetition)")
                )
                rates[threads == 1 ? "1-writer" : "stowage", default: []].append(rate)
                ok = ok && allStored
            }
        }
        let medians = rates.mapValues(median)
        return ScenarioResult(
            name: name,
            unit: "ops/s",
            stowage: medians["stowage"]!,
            baselines: ["1-writer": medians["1-writer"]!],
            ok: ok,
            notes: "\(count) threads set \(keyCount) distinct 1 KiB keys (durable); ops/s, higher is better, "
                + "so the ratio is the speed-up over one writer; median of \(repetitions)"
        )
    }

    private func tasks(_ count: Int, _ context: BenchContext, root: URL) async throws -> ScenarioResult {
        var rates: [String: [Double]] = [:]
        var ok = true
        let repetitions = min(context.iterations, 5)
        for repetition in 0..<repetitions {
            for tasks in [1, count] {
                let (rate, allStored) = try await taskRate(tasks, in: root.appending(path: "t\(tasks)-\(repetition)"))
                rates[tasks == 1 ? "1-task" : "stowage", default: []].append(rate)
                ok = ok && allStored
            }
            let (rate, allStored) = try await threadRate(8, in: root.appending(path: "t8threads-\(repetition)"))
            rates["8-threads", default: []].append(rate)
            ok = ok && allStored
        }
        let medians = rates.mapValues(median)
        return ScenarioResult(
            name: name,
            unit: "ops/s",
            stowage: medians["stowage"]!,
            baselines: ["1-task": medians["1-task"]!, "8-threads": medians["8-threads"]!],
            ok: ok,
            notes: "\(count) tasks `await setData` \(keyCount) distinct 1 KiB keys (durable) against one task "
                + "and against 8 threads on the blocking path; ops/s, higher is better; median of \(repetitions)"
        )
    }

    /// Sets every key into a new cache at `directory` with `fill`, which returns how many of its
    /// writes failed: the keys per second, and whether every key was stored.
    private func setRate(in directory: URL, _ fill: (DiskCache) async -> Int) async throws -> (Double, Bool) {
        let cache = try open(directory)
        let start = ContinuousClock.now
        let failures = await fill(cache)
        let rate = Double(keys.count) / Subprocess.seconds(ContinuousClock.now - start)
        let stored = try await cache.usage().count
        try await cache.close()
        return (rate, failures == 0 && stored == keys.count)
    }

    /// ``setRate(in:_:)`` from `threads` threads of their own through the blocking API.
    private func threadRate(_ threads: Int, in directory: URL) async throws -> (Double, Bool) {
        let keys = keys
        let value = value
        return try await setRate(in: directory) { cache in
            let failures = Atomic<Int>(0)
            Self.onThreads(threads) { thread in
                for index in stride(from: thread, to: keys.count, by: threads) {
                    do { try cache.setData(value, forKey: keys[index]) } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            return failures.load(ordering: .relaxed)
        }
    }

    /// ``setRate(in:_:)`` from `tasks` tasks through the async API.
    private func taskRate(_ tasks: Int, in directory: URL) async throws -> (Double, Bool) {
        let keys = keys
        let value = value
        return try await setRate(in: directory) { cache in
            await withTaskGroup(of: Int.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var failures = 0
                        for index in stride(from: task, to: keys.count, by: tasks) {
                            do { try await cache.setData(value, forKey: keys[index]) } catch { failures += 1 }
                        }
                        return failures
                    }
                }
                return await group.reduce(0, +)
            }
        }
    }

    /// Runs `body(index)` on `count` threads of their own (not a pool that may run fewer at once)
    /// and returns when all have finished.
    private static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<count {
            Thread {
                body(index)
                finished.signal()
            }.start()
        }
        for _ in 0..<count { finished.wait() }
    }
}
