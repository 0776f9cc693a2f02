/// A goal one scenario is held to: its figure against a baseline's, or against a fixed value.
/// `stowage-bench --check` exits with status 1 when a scenario that ran misses one.
struct BenchTarget: Encodable, Sendable {
    enum Kind: String, Encodable, Sendable {
        /// stowage / baseline must not exceed the bound (a time: lower is better).
        case ratioAtMost
        /// stowage / baseline must reach the bound (a rate: higher is better).
        case ratioAtLeast
        /// stowage − baseline must not exceed the bound, in the scenario's unit.
        case excessAtMost
        /// Stowage's own figure must not exceed the bound, in the scenario's unit.
        case valueAtMost
    }

    var kind: Kind
    var bound: Double
    /// The baseline compared with; `nil` for ``Kind/valueAtMost``.
    var baseline: String?
    /// Where the goal comes from.
    var source: String

    static func ratio(atMost bound: Double, against baseline: String, _ source: String) -> Self {
        Self(kind: .ratioAtMost, bound: bound, baseline: baseline, source: source)
    }

    static func ratio(atLeast bound: Double, against baseline: String, _ source: String) -> Self {
        Self(kind: .ratioAtLeast, bound: bound, baseline: baseline, source: source)
    }

    static func excess(atMost bound: Double, over baseline: String, _ source: String) -> Self {
        Self(kind: .excessAtMost, bound: bound, baseline: baseline, source: source)
    }

    static func value(atMost bound: Double, _ source: String) -> Self {
        Self(kind: .valueAtMost, bound: bound, baseline: nil, source: source)
    }

    /// How `result` fares: the figure compared and whether it meets the bound; `nil` when the
    /// baseline did not run (skipped, or not installed).
    func evaluate(_ result: ScenarioResult) -> (figure: Double, isMet: Bool)? {
        if kind == .valueAtMost { return (result.stowage, result.stowage <= bound) }
        guard let baseline, let measured = result.baselines[baseline], measured > 0 else { return nil }
        switch kind {
        case .ratioAtMost: return (result.stowage / measured, result.stowage / measured <= bound)
        case .ratioAtLeast: return (result.stowage / measured, result.stowage / measured >= bound)
        case .excessAtMost: return (result.stowage - measured, result.stowage - measured <= bound)
        case .valueAtMost: return nil
        }
    }

    /// "stowage/du ≤ 1.1", for reports.
    var formula: String {
        switch kind {
        case .ratioAtMost: "stowage/\(baseline ?? "") <= \(BenchContext.format(bound))"
        case .ratioAtLeast: "stowage/\(baseline ?? "") >= \(BenchContext.format(bound))"
        case .excessAtMost: "stowage - \(baseline ?? "") <= \(BenchContext.format(bound))"
        case .valueAtMost: "stowage <= \(BenchContext.format(bound))"
        }
    }
}

extension BenchTarget {
    /// Every scenario's goals, by scenario name (Benchmarks/README.md). Scenarios without goals only report.
    static let byScenario: [String: [BenchTarget]] = fixedScenarios.merging(ScaleScenario.targets) { $0 + $1 }
        .merging(ScaleMemoryCacheScenario.targets) { $0 + $1 }.merging(ScaleFilesScenario.targets) { $0 + $1 }

    private static let fixedScenarios: [String: [BenchTarget]] = [
        "disk-usage.tree-100k": [.ratio(atMost: 1.1, against: "du", "as fast as du (10% for noise)")],
        "memory-cache.set-get": [
            .ratio(atMost: 2, against: "dictionary+mutex", "within 2x a bare dictionary"),
            .ratio(atMost: 0.2, against: "NSCache", "5x NSCache"),
        ],
        "disk-cache.get-1KiB": [
            .ratio(atMost: 1.5, against: "sqlite-c", "within 1.5x SQLite's C API"),
            .value(atMost: 4, "a 1 KiB hit in 4 µs"),
        ],
        "disk-cache.get-1KiB-async": [.excess(atMost: 5, over: "blocking", "the blocking read + 5 µs")],
        "disk-cache.set-1KiB": [
            .ratio(atMost: 1.0 / 3, against: "python-diskcache", "3x python-diskcache"),
            .value(atMost: 35, "a durable 1 KiB set in 35 µs"),
        ],
        "disk-cache.set-1KiB-deferred": [.value(atMost: 5, "5 µs sustained")],
        "disk-cache.set-1KiB-8-writers": [.ratio(atLeast: 4, against: "1-writer", "4x one writer")],
        "cleaner.clean-100k": [.ratio(atMost: 1.5, against: "rm -rf", "within 1.5x rm -rf")],
        "purge.sweep-100k": [.ratio(atMost: 1.5, against: "find -mtime -delete", "within 1.5x find -delete")],
        "account.report": [.ratio(atMost: 0.1, against: "disk-usage walk", "10x a walk of the container")],
        "preferences.set-int": [.ratio(atMost: 0.01, against: "UserDefaults", "100x UserDefaults")],
        "preferences.get-int": [.ratio(atMost: 0.1, against: "UserDefaults", "10x UserDefaults")],
        "hybrid-cache.memory-hit": [
            .ratio(atMost: 1.5, against: "memory-tier-alone", "a hit within 1.5x the memory tier alone")
        ],
        "hybrid-cache.disk-read-1KiB": [
            .ratio(atMost: 1.5, against: "by-hand-async", "within 1.5x the same read written by hand")
        ],
        "shared-tier.get-1KiB": [
            .ratio(atMost: 1 / 0.9, against: "redis-benchmark", "0.9x its throughput")
        ],
        "shared-tier.set-1KiB": [
            .ratio(atMost: 1 / 0.9, against: "redis-benchmark", "0.9x its throughput")
        ],
    ]
}
