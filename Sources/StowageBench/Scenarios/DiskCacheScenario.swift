import Foundation
import GRDB
import StowageCache
import StowageCore

/// `disk-cache.{set,get}-{1KiB,1MiB}`: one operation per key, microseconds per operation.
///
/// Baselines in the same run, on the same volume:
/// - `files`: one file per key, `Data.write(to:options: .atomic)` and `Data(contentsOf:)` —
///   what most Swift code and SDImageCache do.
/// - `sqlite`: a plain GRDB table in WAL mode with `synchronous = NORMAL` (as Stowage's index),
///   one `INSERT OR REPLACE` or `SELECT` per operation.
/// - `sqlite-c`: the same table through SQLite's C API with its statements prepared once, the
///   floor of any SQLite index (``SQLiteCStore``).
/// - `python-diskcache`: the Python peer, when installed (``PythonDiskCache``).
///
/// Each timed repetition of a `set` scenario writes every key into a fresh, empty store; `get`
/// scenarios read every key of a store filled once beforehand. `ok` means every value Stowage
/// read back equalled what was written.
struct DiskCacheScenario: Scenario {
    enum Operation: String, Sendable { case set, get }

    let operation: Operation
    let valueSize: Int
    let keyCount: Int
    let sizeLabel: String

    var name: String { "disk-cache.\(operation.rawValue)-\(sizeLabel)" }

    static let all: [DiskCacheScenario] = [
        DiskCacheScenario(operation: .set, valueSize: 1_024, keyCount: 10_000, sizeLabel: "1KiB"),
        DiskCacheScenario(operation: .get, valueSize: 1_024, keyCount: 10_000, sizeLabel: "1KiB"),
        DiskCacheScenario(operation: .set, valueSize: 1 << 20, keyCount: 200, sizeLabel: "1MiB"),
        DiskCacheScenario(operation: .get, valueSize: 1 << 20, keyCount: 200, sizeLabel: "1MiB"),
    ]

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "disk-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let keys = (0..<keyCount).map { "https://example.com/assets/\($0).bin" }
        let value = Data((0..<valueSize).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        // File baselines take ~0.4 ms a write: cap the repetitions so a run stays short.
        let repetitions = min(context.iterations, 5)

        var contenders: [(name: String, store: any BenchStore.Type)] = [
            ("stowage", StowageStore.self), ("files", FileStore.self), ("sqlite", SQLiteStore.self),
            ("sqlite-c", SQLiteCStore.self),
        ]
        // `STOWAGE_BENCH_ONLY_STOWAGE=1` drops the baselines, to profile Stowage alone (`perf record`).
        let onlyStowage = ProcessInfo.processInfo.environment["STOWAGE_BENCH_ONLY_STOWAGE"] == "1"
        if onlyStowage { contenders.removeAll { $0.name != "stowage" } }
        var times: [String: [Double]] = [:]
        var ok = true
        var prepared: [String: any BenchStore] = [:]
        if operation == .get {
            for contender in contenders {
                let store = try contender.store.init(directory: root.appending(path: "\(contender.name)-get"))
                for key in keys { try store.set(value, forKey: key) }
                prepared[contender.name] = store
            }
        }
        for repetition in 0..<repetitions {
            contenders.shuffle()  // no contender always runs on a cold or warm machine
            for contender in contenders {
                switch operation {
                case .set:
                    let store = try contender.store.init(
                        directory: root.appending(path: "\(contender.name)-set-\(repetition)")
                    )
                    let timed = try BenchContext.median(1) { for key in keys { try store.set(value, forKey: key) } }
                    times[contender.name, default: []].append(timed.seconds)
                    if contender.name == "stowage" {
                        let readBack = try store.get(keys[keyCount / 2])
                        ok = ok && readBack == value
                    }
                    try store.close()
                case .get:
                    let store = prepared[contender.name]!
                    let timed = try BenchContext.median(1) {
                        var matches = 0
                        for key in keys where try store.get(key) == value { matches += 1 }
                        return matches
                    }
                    times[contender.name, default: []].append(timed.seconds)
                    if contender.name == "stowage" { ok = ok && timed.result == keyCount }
                }
            }
        }
        for store in prepared.values { try store.close() }
        let python =
            onlyStowage
            ? nil
            : PythonDiskCache.microsecondsPerOperation(
                setting: operation == .set,
                keyCount: keyCount,
                valueSize: valueSize,
                repetitions: repetitions,
                directory: root.appending(path: "python-diskcache")
            )
        return .diskCache(
            name: name,
            seconds: times,
            keyCount: keyCount,
            pythonDiskCache: python,
            ok: ok,
            notes: "\(keyCount) keys × \(valueSize) bytes, median of \(repetitions); "
                + (ok ? "every value read back equal" : "a value read back wrong")
        )
    }
}
