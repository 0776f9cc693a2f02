import Foundation
import StowagePreferences

/// `preferences.set-int` and `preferences.get-int`: 10,000 distinct `Int` keys; microseconds
/// (set) or nanoseconds (get) per operation.
///
/// - set: each `Preferences.set` into a fresh suite, durable against the process being killed
///   as soon as it returns (one `pwrite`). Baseline `UserDefaults`: `set(_:forKey:)` then
///   `synchronize()` per write, the only way its write is on disk when the call returns.
/// - get: typed reads of the 10,000 keys from a filled suite. Baseline `UserDefaults`:
///   `integer(forKey:)` on a filled suite.
///
/// UserDefaults rewrites its whole property list on every `synchronize()`, so its set time grows
/// with the number of keys and one repetition of 10,000 takes minutes: the baseline runs once
/// whatever `--iterations` says. Foundation on Linux writes it to `~/.config/SUITE.plist` (it
/// ignores `HOME` and `XDG_CONFIG_HOME` set in-process); the scenario removes that file.
/// `ok` means every value read back equal in both stores.
struct PreferencesScenario: Scenario {
    enum Operation: String, Sendable {
        case set = "set-int"
        case get = "get-int"
    }

    let operation: Operation
    let keyCount = 10_000
    var name: String { "preferences.\(operation.rawValue)" }

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "preferences-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let names = (0..<keyCount).map { "key\($0)" }
        let keys = names.map { Preferences.Key<Int>($0, default: -1) }

        var stowageOK = true
        var stowageTimes: [Double] = []
        for _ in 0..<context.iterations {
            stowageTimes.append(try measureStowage(root: root, keys: keys, ok: &stowageOK))
        }
        var defaultsOK = true
        let defaultsTime = measureDefaults(names: names, ok: &defaultsOK)

        let perOperation = operation == .set ? 1e6 : 1e9
        return ScenarioResult(
            name: name,
            unit: operation == .set ? "us/op" : "ns/op",
            stowage: stowageTimes.sorted()[stowageTimes.count / 2] * perOperation / Double(keyCount),
            baselines: ["UserDefaults": defaultsTime * perOperation / Double(keyCount)],
            ok: stowageOK && defaultsOK,
            notes: operation == .set
                ? "\(keyCount) distinct Int keys, each set durable against kill -9 on return (UserDefaults: set + "
                    + "synchronize, run once); every value read back equal"
                : "\(keyCount) typed reads of distinct Int keys from a filled store (UserDefaults: integer(forKey:), "
                    + "run once); sums equal"
        )
    }

    /// One repetition in a fresh suite; returns the seconds the timed operations took.
    private func measureStowage(root: URL, keys: [Preferences.Key<Int>], ok: inout Bool) throws -> Double {
        let file = root.appending(path: "suite-\(UUID().uuidString).stowprefs")
        let preferences = try Preferences.open(at: file)
        let clock = ContinuousClock()
        switch operation {
        case .set:
            let start = clock.now
            for index in 0..<keyCount { try preferences.set(index, for: keys[index]) }
            let elapsed = clock.now - start
            ok = ok && keys.enumerated().allSatisfy { preferences[$1] == $0 }
            return Self.seconds(elapsed)
        case .get:
            for index in 0..<keyCount { try preferences.set(index, for: keys[index]) }
            var sum = 0
            let start = clock.now
            for key in keys { sum &+= preferences[key] }
            let elapsed = clock.now - start
            ok = ok && sum == keyCount * (keyCount - 1) / 2
            return Self.seconds(elapsed)
        }
    }

    /// The UserDefaults baseline, once; returns the seconds the timed operations took.
    private func measureDefaults(names: [String], ok: inout Bool) -> Double {
        let suite = "org.stowage.bench.\(UUID().uuidString)"
        let store = UserDefaults(suiteName: suite)!
        defer {
            store.removePersistentDomain(forName: suite)
            let home = FileManager.default.homeDirectoryForCurrentUser
            try? FileManager.default.removeItem(at: home.appending(path: ".config/\(suite).plist"))
        }
        let clock = ContinuousClock()
        switch operation {
        case .set:
            let start = clock.now
            for index in 0..<keyCount {
                store.set(index, forKey: names[index])
                store.synchronize()
            }
            let elapsed = clock.now - start
            ok = names.enumerated().allSatisfy { store.integer(forKey: $1) == $0 }
            return Self.seconds(elapsed)
        case .get:
            for index in 0..<keyCount { store.set(index, forKey: names[index]) }
            store.synchronize()
            var sum = 0
            let start = clock.now
            for name in names { sum &+= store.integer(forKey: name) }
            let elapsed = clock.now - start
            ok = sum == keyCount * (keyCount - 1) / 2
            return Self.seconds(elapsed)
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
