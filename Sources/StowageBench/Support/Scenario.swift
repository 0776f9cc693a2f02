import Foundation

/// One benchmark: times Stowage and its baselines on the same fixture and checks they agree.
protocol Scenario: Sendable {
    /// Dotted name, family first: `disk-usage.tree-100k`.
    var name: String { get }
    func run(_ context: BenchContext) async throws -> ScenarioResult
    /// Every result the scenario measured: ``run(_:)``'s one for most; a family measured on
    /// shared fixtures (the scale bench, one result per operation and size) returns several.
    func results(_ context: BenchContext) async throws -> [ScenarioResult]
}

extension Scenario {
    func results(_ context: BenchContext) async throws -> [ScenarioResult] { [try await run(context)] }
}

/// A family of results measured on shared fixtures (the scale bench: one result per operation and
/// size), which implements ``Scenario/results(_:)``; its first result stands for it where one
/// result is asked for.
protocol ScenarioFamily: Scenario {}

extension ScenarioFamily {
    func run(_ context: BenchContext) async throws -> ScenarioResult {
        guard let first = try await results(context).first else { throw BenchFailure("\(name): no size to run") }
        return first
    }
}

/// What a scenario measured, in the JSON shape CI reads.
struct ScenarioResult: Encodable {
    var name: String
    /// `"ns/op"` or `"s"`.
    var unit: String
    /// Stowage's median.
    var stowage: Double
    /// Each baseline's median, by name.
    var baselines: [String: Double]
    /// Whether Stowage's result matched the reference baseline's (e.g. equal byte totals).
    var ok: Bool
    /// Stowage's time divided by each baseline's: below 1 means Stowage is faster.
    var ratios: [String: Double]
    /// What was compared, for people reading the JSON.
    var notes: String
    /// The scenario's goals and how this run fared against each.
    var targets: [AssessedTarget] = []

    /// One goal and this run's figure for it.
    struct AssessedTarget: Encodable {
        var formula: String
        var source: String
        /// The ratio, excess or value compared; `nil` when the baseline did not run.
        var figure: Double?
        /// `nil` when the baseline did not run.
        var isMet: Bool?
    }

    /// Records how this result fares against `goals`.
    mutating func assess(against goals: [BenchTarget]) {
        targets = goals.map { goal in
            let outcome = goal.evaluate(self)
            return AssessedTarget(
                formula: goal.formula,
                source: goal.source,
                figure: outcome?.figure,
                isMet: outcome?.isMet
            )
        }
    }

    init(name: String, unit: String, stowage: Double, baselines: [String: Double], ok: Bool, notes: String) {
        self.name = name
        self.unit = unit
        self.stowage = stowage
        self.baselines = baselines
        self.ok = ok
        self.ratios = baselines.mapValues { $0 > 0 ? stowage / $0 : .infinity }
        self.notes = notes
    }

    var humanReadable: String {
        let baselineText = baselines.keys.sorted().map { key in
            "\(key) \(BenchContext.format(baselines[key]!)) \(unit) (stowage/\(key) = \(BenchContext.format(ratios[key]!)))"
        }.joined(separator: ", ")
        let targetText = targets.map { target in
            let verdict = target.isMet.map { $0 ? "met" : "MISSED" } ?? "not measured"
            return "; target \(target.formula): \(verdict)"
        }.joined()
        return
            "\(name): stowage \(BenchContext.format(stowage)) \(unit); \(baselineText); \(ok ? "ok" : "MISMATCH"): \(notes)\(targetText)"
    }
}

/// Settings and helpers every scenario shares.
struct BenchContext: Sendable {
    var iterations: Int
    var fixtures: URL

    static func defaultFixtureDirectory() -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["STOWAGE_BENCH_FIXTURES"], path.hasPrefix("/") { return URL(filePath: path) }
        let temporary = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        return URL(filePath: temporary).appending(path: "stowage-bench-fixtures")
    }

    /// Runs `body` `count` times and returns the median wall-clock time in seconds and the last result.
    static func median<T>(_ count: Int, _ body: () throws -> T) rethrows -> (seconds: Double, result: T) {
        var times: [Double] = []
        var last: T?
        let clock = ContinuousClock()
        for _ in 0..<count {
            let start = clock.now
            last = try body()
            let elapsed = clock.now - start
            times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        times.sort()
        return (times[times.count / 2], last!)
    }

    static func progress(_ message: String) {
        FileHandle.standardError.write(Data("stowage-bench: \(message)\n".utf8))
    }

    static func format(_ value: Double) -> String {
        value >= 100 ? String(Int(value.rounded())) : String(Double(Int((value * 1000).rounded())) / 1000)
    }
}

/// The middle value of repeated timings (the upper middle for an even count).
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
