import Foundation
import StowageCache
import StowageCore

/// `scale.disk-cache.*`: what a disk cache operation costs as the cache grows, beside
/// python-diskcache 5.6.3 and SQLite's C API (``ScaleSQLiteFloor``) at each size, 1 KiB values.
///
/// At each size n (`STOWAGE_BENCH_SCALE_SIZES`, comma-separated; default `10000`, the smoke run
/// `.ci/run` makes), every contender is filled with n entries outside the timed region, then:
/// - `open-<n>`: opening the filled store (median of ``opens``; µs);
/// - `set-<n>`: m = min(n, 10,000) writes of new keys, each durable against a process crash (µs/op);
/// - `get-<n>`: m reads of existing keys in a scattered order (µs/op);
/// - `remove-<n>`: m removals of existing keys (µs/op);
/// - `usage-<n>`: the entry count and byte total (µs/op; python-diskcache's `volume()`);
/// - `trim-half-<n>`: removing the least recently used half (seconds; python-diskcache culls to
///   half its volume);
/// - `set-at-limit-<n>` (n ≤ 100,000): n writes of new keys into a cache filled to its size limit
///   (Stowage: `sizeLimit` = n KiB; python-diskcache: `size_limit` = its volume), against the same
///   writes into the same cache without a limit (`stowage-below-limit`); the culls they cause
///   run in their own transactions, and a closing `trim()` (which finishes a cull in progress,
///   and waits for any background trim) is inside the timing.
///
/// Stowage waits for its open's background integrity check before the timed operations (it
/// reads the whole index once per open, on the maintenance lane).
struct ScaleScenario: Scenario {
    let name = "scale.disk-cache"

    static let value = Data((0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 131) })
    static func key(_ index: Int) -> String { "https://example.com/assets/\(index).bin" }
    /// Opens timed per contender and size, the median reported: an open takes about a
    /// millisecond, which one preemption on a loaded 2-core machine doubles, so three opens
    /// swung 1–12 ms between runs.
    static let opens = 9
    /// The j-th key of a scattered order over n keys (7919 is prime, so this is a permutation of
    /// 0..<n for the powers of ten the bench uses); the Python script uses the same formula.
    static func pick(_ j: Int, _ n: Int, offset: Int = 13) -> Int { (j * 7919 + offset) % n }

    static func sizes() -> [Int] {
        let text = ProcessInfo.processInfo.environment["STOWAGE_BENCH_SCALE_SIZES"] ?? "10000"
        return text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
    }

    /// `STOWAGE_BENCH_SCALE_PEERS=none` measures Stowage alone (no SQLite floor, no
    /// python-diskcache): quicker runs while profiling; the figures then have no baselines.
    static var withPeers: Bool { ProcessInfo.processInfo.environment["STOWAGE_BENCH_SCALE_PEERS"] != "none" }

    static func label(_ size: Int) -> String {
        var exponent = 0
        var rest = size
        while rest >= 10, rest % 10 == 0 {
            rest /= 10
            exponent += 1
        }
        return rest == 1 ? "1e\(exponent)" : "\(size)"
    }

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        guard let first = try await results(context).first else { throw BenchFailure("no scale size to run") }
        return first
    }

    func results(_ context: BenchContext) async throws -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for size in Self.sizes() {
            let root = context.fixtures.appending(path: "scale-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            BenchContext.progress("scale: \(size) entries")
            results += try measure(size: size, root: root)
            if size <= 100_000 { results.append(try atLimit(size: size, root: root)) }
        }
        Self.reportGrowth(results)
        return results
    }

    private func configuration(sizeLimit: ByteCount? = nil) -> DiskCache.Configuration {
        var configuration = DiskCache.Configuration(name: "scale")
        configuration.sizeLimit = sizeLimit
        return configuration
    }

    /// Fills a Stowage cache with `count` entries, in deferred batches (fixture only).
    private func fillStowage(_ directory: URL, count: Int) throws {
        var configuration = configuration()
        configuration.durability = .deferred(maximumDelay: .seconds(1))
        let cache = try DiskCache(directory: directory, configuration: configuration)
        for index in 0..<count { try cache.setData(Self.value, forKey: Self.key(index)) }
        try cache.close()
    }

    private static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return Subprocess.seconds(clock.now - start)
    }

    private func measure(size: Int, root: URL) throws -> [ScenarioResult] {
        let operations = min(size, 10_000)
        var stowage: [String: Double] = [:]
        var floor: [String: Double] = [:]
        var ok = true

        // Stowage.
        let directory = root.appending(path: "stowage")
        try fillStowage(directory, count: size)
        var opens: [Double] = []
        for _ in 0..<Self.opens {
            var cache: DiskCache?
            opens.append(
                try Self.seconds { cache = try DiskCache(directory: directory, configuration: configuration()) }
            )
            try cache?.close()
        }
        stowage["open"] = median(opens) * 1e6
        let cache = try DiskCache(directory: directory, configuration: configuration())
        _ = try cache.trim()  // after the open's integrity check, on the maintenance lane
        stowage["set"] =
            try Self.seconds {
                for index in size..<(size + operations) { try cache.setData(Self.value, forKey: Self.key(index)) }
            } / Double(operations) * 1e6
        var hits = 0
        stowage["get"] =
            try Self.seconds {
                for j in 0..<operations where try cache.data(forKey: Self.key(Self.pick(j, size))) == Self.value {
                    hits += 1
                }
            } / Double(operations) * 1e6
        ok = ok && hits == operations
        var removed = 0
        stowage["remove"] =
            try Self.seconds {
                for j in 0..<operations where try cache.removeData(forKey: Self.key(Self.pick(j, size, offset: 17))) {
                    removed += 1
                }
            } / Double(operations) * 1e6
        ok = ok && removed == operations
        var usage = try cache.usage()
        stowage["usage"] = try Self.seconds { for _ in 0..<1_000 { usage = try cache.usage() } } / 1_000 * 1e6
        ok = ok && usage.count == size
        let countBefore = usage.count
        // The two lines mark the trim for a profiler attached to the process (`strace -p`, `perf -p`).
        BenchContext.progress("scale: \(size) entries: trimming half")
        let cpuBefore = Self.processCPUSeconds()
        stowage["trim-half"] = try Self.seconds { _ = try cache.trim(freeing: ByteCount(usage.size.rawValue / 2)) }
        let trimCPU = Self.processCPUSeconds() - cpuBefore
        BenchContext.progress("scale: \(size) entries: trimmed")
        let countAfter = try cache.usage().count
        ok = ok && countAfter == countBefore / 2
        try cache.close()

        var rows = 0
        if Self.withPeers {
            // SQLite's C API.
            let store = try ScaleSQLiteFloor(directory: root.appending(path: "sqlite-c"))
            try store.fill((0..<size).lazy.map(Self.key), value: Self.value)
            store.close()
            var floorOpens: [Double] = []
            for repetition in 0..<Self.opens {
                floorOpens.append(
                    try Self.seconds {
                        try store.open()
                        try store.prepareAll()
                    }
                )
                if repetition < Self.opens - 1 { store.close() }
            }
            floor["open"] = median(floorOpens) * 1e6
            floor["set"] =
                try Self.seconds {
                    for index in size..<(size + operations) { try store.set(Self.value, forKey: Self.key(index)) }
                } / Double(operations) * 1e6
            floor["get"] =
                try Self.seconds {
                    for j in 0..<operations where try store.get(Self.key(Self.pick(j, size))) != Self.value {
                        throw BenchFailure("sqlite-c read back a wrong value")
                    }
                } / Double(operations) * 1e6
            floor["remove"] =
                try Self.seconds {
                    for j in 0..<operations { try store.remove(Self.key(Self.pick(j, size, offset: 17))) }
                } / Double(operations) * 1e6
            rows = try store.rowCount
            floor["trim-half"] = try Self.seconds { try store.trim(removing: rows / 2) }
            store.close()
        }

        let load = Self.loadAverage()
        let python =
            !Self.withPeers
            ? nil
            : PythonDiskCacheScale.measure(
                directory: root.appending(path: "python"),
                size: size,
                operations: operations,
                atLimit: false
            )
        let label = Self.label(size)
        return ["open", "set", "get", "remove", "usage", "trim-half"].map { operation in
            var baselines: [String: Double] = [:]
            baselines["sqlite-c"] = floor[operation]
            baselines["python-diskcache"] = python?[operation]
            var notes = "\(size) entries of 1 KiB; \(load)"
            switch operation {
            case "open": notes += "; median of \(Self.opens) opens"
            case "trim-half":
                notes +=
                    "; Stowage removed \(countBefore - countAfter) of \(countBefore), sqlite-c \(rows / 2) of \(rows)"
                    + "; Stowage's trim used \(String(format: "%.2f", trimCPU)) s of CPU (user + system)"
                if let removed = python?["trim-half-removed"] { notes += ", python-diskcache \(Int(removed))" }
            case "usage": notes += "; 1,000 calls"
            default: notes += "; \(operations) operations"
            }
            return ScenarioResult(
                name: "\(name).\(operation)-\(label)",
                unit: operation == "trim-half" ? "s" : "us/op",
                stowage: stowage[operation]!,
                baselines: baselines,
                ok: ok,
                notes: notes + (ok ? "; every value read back equal" : "; a count or value was wrong")
            )
        }
    }

    /// Sets into a cache at its size limit against the same sets below it: three runs of each,
    /// alternating, medians compared.
    private func atLimit(size: Int, root: URL) throws -> ScenarioResult {
        var runs: [String: [Double]] = [:]
        for repetition in 0..<3 {
            for (label, limit) in [("stowage-below-limit", nil), ("stowage", ByteCount(Int64(size) * 1_024))] {
                let directory = root.appending(path: "limit-\(label)-\(repetition)")
                try fillStowage(directory, count: size)
                let cache = try DiskCache(directory: directory, configuration: configuration(sizeLimit: limit))
                _ = try cache.trim()
                let seconds = try Self.seconds {
                    for index in size..<(2 * size) { try cache.setData(Self.value, forKey: Self.key(index)) }
                    _ = try cache.trim()  // the background trims the sets queued
                }
                runs[label, default: []].append(seconds / Double(size) * 1e6)
                try cache.close()
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let figures = runs.mapValues(median)
        let python =
            !Self.withPeers
            ? nil
            : PythonDiskCacheScale.measure(
                directory: root.appending(path: "python-limit"),
                size: size,
                operations: size,
                atLimit: true
            )
        var baselines = ["stowage-below-limit": figures["stowage-below-limit"]!]
        baselines["python-diskcache"] = python?["at-limit"]
        baselines["python-diskcache-below-limit"] = python?["below-limit"]
        return ScenarioResult(
            name: "\(name).set-at-limit-\(Self.label(size))",
            unit: "us/op",
            stowage: figures["stowage"]!,
            baselines: baselines,
            ok: true,
            notes: "\(size) sets of new 1 KiB keys into a cache of \(size) entries at its size limit "
                + "(culled to half in the writes' own transactions, a closing trim() inside the timing) "
                + "vs the same sets without a limit; "
                + "median of 3 runs each; \(Self.loadAverage())"
        )
    }

    /// CPU time the process has used, user and system (C's `clock()`): on a loaded 2-core
    /// machine a trim's wall time follows the others' load, its CPU time much less.
    static func processCPUSeconds() -> Double {
        Double(clock()) / Double(CLOCKS_PER_SEC)
    }

    /// The machine's load averages (`getloadavg(3)`), for the notes: figures from a busy machine
    /// say so.
    static func loadAverage() -> String {
        var loads = [Double](repeating: 0, count: 3)
        guard getloadavg(&loads, 3) == 3 else { return "load unknown" }
        return "load average " + loads.map { String(format: "%.2f", $0) }.joined(separator: " ")
    }

    /// Prints each operation's cost at the largest size against 10^4 (open: against the smallest).
    private static func reportGrowth(_ results: [ScenarioResult]) {
        let sizes = sizes().sorted()
        guard let largest = sizes.last, sizes.count > 1 else { return }
        for operation in ["open", "set", "get", "remove", "usage", "trim-half"] {
            let reference = operation == "open" || !sizes.contains(10_000) ? sizes[0] : 10_000
            guard reference != largest,
                let big = results.first(where: { $0.name == "scale.disk-cache.\(operation)-\(label(largest))" }),
                let small = results.first(where: { $0.name == "scale.disk-cache.\(operation)-\(label(reference))" })
            else { continue }
            let python = big.baselines["python-diskcache"].flatMap { bigPython in
                small.baselines["python-diskcache"].map { bigPython / $0 }
            }
            BenchContext.progress(
                "scale growth: \(operation) at \(label(largest)) = \(BenchContext.format(big.stowage / small.stowage))× "
                    + "its \(label(reference)) figure (python-diskcache \(python.map(BenchContext.format) ?? "-")×)"
            )
        }
    }

    /// Goals from the issue, by result name.
    static let targets: [String: [BenchTarget]] = {
        var targets: [String: [BenchTarget]] = [
            "scale.disk-cache.open-1e6": [.value(atMost: 50_000, "open a million entries in 50 ms")],
            "scale.disk-cache.trim-half-1e6": [.value(atMost: 10, "trim half of a million entries in 10 s")],
        ]
        for label in ["1e3", "1e4", "1e5", "1e6"] {
            for operation in ["open", "set", "get", "remove", "usage", "trim-half"] {
                targets["scale.disk-cache.\(operation)-\(label)", default: []].append(
                    .ratio(atMost: 1, against: "python-diskcache", "ahead of python-diskcache")
                )
            }
            targets["scale.disk-cache.set-at-limit-\(label)"] = [
                .ratio(atMost: 1.3, against: "stowage-below-limit", "a set at the limit within 1.3x one below it")
            ]
        }
        return targets
    }()
}
