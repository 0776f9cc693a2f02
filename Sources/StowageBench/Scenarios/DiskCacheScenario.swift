import Foundation
import GRDB
import StowageCache
import StowageCore

/// `disk-cache.{set,get}-{1KiB,1MiB}`: one operation per key, microseconds per operation.
///
/// Baselines in the same run, on the same volume:
/// - `files`: one file per key, `Data.write(to:options: .atomic)` and `Data(contentsOf:)` —
///   what most Swift code and the seed's SDImageCache do.
/// - `sqlite`: a plain GRDB table in WAL mode with `synchronous = NORMAL` (as Stowage's index),
///   one `INSERT OR REPLACE` or `SELECT` per operation.
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
        ]
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
        let perOperation = times.mapValues { $0.sorted()[$0.count / 2] / Double(keyCount) * 1e6 }
        return ScenarioResult(
            name: name,
            unit: "us/op",
            stowage: perOperation["stowage"]!,
            baselines: perOperation.filter { $0.key != "stowage" },
            ok: ok,
            notes: "\(keyCount) keys × \(valueSize) bytes, median of \(repetitions); "
                + (ok ? "every value read back equal" : "a value read back wrong")
        )
    }
}

/// What each contender offers the scenario.
protocol BenchStore: Sendable {
    init(directory: URL) throws
    func set(_ value: Data, forKey key: String) throws
    func get(_ key: String) throws -> Data?
}

/// Stowage's disk cache, limits off so the bench measures writes and reads only.
struct StowageStore: BenchStore {
    let cache: DiskCache
    init(directory: URL) throws {
        var configuration = DiskCache.Configuration(name: "bench")
        configuration.sizeLimit = nil
        cache = try DiskCache(directory: directory, configuration: configuration)
    }
    func set(_ value: Data, forKey key: String) throws { try cache.setDataBlocking(value, forKey: key) }
    func get(_ key: String) throws -> Data? { try cache.dataBlocking(forKey: key) }
}

/// One file per key through Foundation, names from the key's hash as SDImageCache does.
struct FileStore: BenchStore {
    let directory: URL
    init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    private func url(_ key: String) -> URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return directory.appending(path: String(hash, radix: 16))
    }
    func set(_ value: Data, forKey key: String) throws { try value.write(to: url(key), options: .atomic) }
    func get(_ key: String) throws -> Data? { try? Data(contentsOf: url(key)) }
}

/// A plain key-value table in GRDB.
struct SQLiteStore: BenchStore {
    let pool: DatabasePool
    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = GRDB.Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        pool = try DatabasePool(path: directory.appending(path: "kv.sqlite").path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL)")
        }
    }
    func set(_ value: Data, forKey key: String) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }
    func get(_ key: String) throws -> Data? {
        try pool.read { db in try Data.fetchOne(db, sql: "SELECT value FROM kv WHERE key = ?", arguments: [key]) }
    }
}
