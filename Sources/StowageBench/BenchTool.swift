import ArgumentParser
import Foundation

/// `stowage-bench`: times Stowage against its baselines in the same run.
@main
struct BenchTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stowage-bench",
        abstract: "Run Stowage's benchmark scenarios, each against its baselines in the same run.",
        discussion: """
            Build in release mode: swift run -c release stowage-bench [--filter PREFIX] [--json].
            Fixtures are generated once outside the timed region, under $STOWAGE_BENCH_FIXTURES
            (default: $TMPDIR/stowage-bench-fixtures or /tmp/stowage-bench-fixtures).
            The scale scenarios (--filter scale) run at the sizes in $STOWAGE_BENCH_SCALE_SIZES,
            comma-separated (default 10000), e.g. 1000,10000,100000,1000000.
            """
    )

    @Option(help: "Run only scenarios whose name starts with PREFIX, e.g. disk-usage; a whole name runs only that one.")
    var filter: String?

    @Flag(help: "Print one JSON array of results on standard output; progress goes to standard error.")
    var json = false

    @Option(help: "Timed repetitions per measurement (the median is reported).")
    var iterations = 7

    @Flag(help: "Hold each scenario that ran to its targets (BenchTarget.swift); exit 1 when one misses.")
    var check = false

    func validate() throws {
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
        let names = Self.scenarios.map(\.name)
        if let filter, !names.contains(where: { $0.hasPrefix(filter) }) {
            throw ValidationError("no scenario starts with '\(filter)'; scenarios: \(names.joined(separator: ", "))")
        }
    }

    /// Every scenario; later issues append theirs.
    static let scenarios: [any Scenario] =
        [
            DiskUsageTreeScenario(), MemoryCacheScenario(), HTTPCacheLookupScenario(),
            PreferencesScenario(operation: .set), PreferencesScenario(operation: .get),
        ] + DiskCacheScenario.all + DiskCacheHotPathScenario.all + [
            CleanerScenario(), PurgeSweepScenario(), AccountScenario(),
        ]
        + SharedTierScenario.all + [HybridDiskReadScenario(), HybridMemoryHitScenario(), ChecksumScenario()]
        + AsyncHopScenario.all + [
            TracingSpanScenario(), ScaleScenario(), ScaleMemoryCacheScenario(), ScaleFilesScenario(),
            ScaleHTTPCacheScenario(),
        ]

    func run() async throws {
        let context = BenchContext(iterations: iterations, fixtures: BenchContext.defaultFixtureDirectory())
        var results: [ScenarioResult] = []
        let exact = Self.scenarios.contains { $0.name == filter }
        for scenario in Self.scenarios
        where filter.map({ exact ? scenario.name == $0 : scenario.name.hasPrefix($0) }) ?? true {
            BenchContext.progress("running \(scenario.name)…")
            for var result in try await scenario.results(context) {
                result.assess(against: BenchTarget.byScenario[result.name] ?? [])
                results.append(result)
                if !json { print(result.humanReadable) }
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
        }
        if results.contains(where: { !$0.ok }) { throw ExitCode(1) }
        if check {
            let missed = results.flatMap { result in
                result.targets.filter { $0.isMet == false }.map { (result.name, $0) }
            }
            for (name, target) in missed {
                BenchContext.progress(
                    "target missed: \(name): \(target.formula) (\(target.source)); measured \(target.figure.map(BenchContext.format) ?? "-")"
                )
            }
            if !missed.isEmpty { throw ExitCode(1) }
        }
    }
}
