import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `purge.sweep-100k`: a sweep of a registered directory of 100,000 files in 1,000 directories,
/// half of them modified 30 days ago, with a 7-day policy.
///
/// Baseline: `find DIR -type f -mtime +7 -delete` as a subprocess (process start included).
/// `-type f` keeps find from trying to delete the fixture's directories once they are old
/// themselves; the sweep never removes directories either. Each repetition copies the fixture
/// (`cp -a`, which keeps the times) outside the timed region. `ok` means both left exactly the
/// same 50,000 files.
struct PurgeSweepScenario: Scenario {
    let name = "purge.sweep-100k"

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        BenchContext.progress("preparing the purge fixture (first run only; 100k files, half 30 days old)…")
        let template = try makeFixture(at: context.fixtures.appending(path: "purge-100k"))
        let root = context.fixtures.appending(path: "purge-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let container = Container(root: root)
        let purgeable = PurgeableDirectories(container: container)
        let directory = try await purgeable.register("Library/Caches/sweep", policy: .oneWeek)
        let repetitions = min(context.iterations, 3)

        var stowageTimes: [Double] = []
        var findTimes: [Double] = []
        var ok = true
        var notes = ""
        for _ in 0..<repetitions {
            try copy(template, to: directory)
            let clock = ContinuousClock()
            let start = clock.now
            let report = try await purgeable.sweep()
            stowageTimes.append(Subprocess.seconds(clock.now - start))
            let stowageLeft = try remainingFiles(directory)

            try copy(template, to: directory)
            findTimes.append(
                try Subprocess.time(["find", directory.fileSystemPath, "-type", "f", "-mtime", "+7", "-delete"])
            )
            let findLeft = try remainingFiles(directory)
            if stowageLeft != findLeft || stowageLeft.count != 50_000 || !report.isComplete { ok = false }
            notes =
                "removed \(report.removedCount) files, freed \(report.bytesFreed.rawValue) B; "
                + "left: stowage \(stowageLeft.count), find \(findLeft.count) files\(stowageLeft == findLeft ? " (same)" : " (DIFFERENT)")"
        }
        return ScenarioResult(
            name: name,
            unit: "s",
            stowage: median(stowageTimes),
            baselines: ["find -mtime -delete": median(findTimes)],
            ok: ok,
            notes: notes
        )
    }

    /// 1,000 directories of 100 files of 0–4 KiB; every odd file is dated 30 days back.
    private func makeFixture(at root: URL) throws -> URL {
        try FixtureTree.make(
            at: root,
            directories: 1_000,
            filesPerDirectory: 100,
            largestFile: 4_096,
            seed: 0x9E86_E5A1,
            links: false,
            oddFilesAge: .seconds(30 * 86_400)
        )
    }

    /// Replaces `destination`'s contents with a copy of `template` (times kept), the marker left out.
    private func copy(_ template: URL, to destination: URL) throws {
        try Subprocess.run(["rm", "-rf", destination.fileSystemPath])
        try Subprocess.run(["cp", "-a", template.fileSystemPath, destination.fileSystemPath])
        try FileManager.default.removeItem(at: destination.appending(path: ".complete"))
    }

    private func remainingFiles(_ directory: URL) throws -> [String] {
        try Subprocess.run(["find", directory.fileSystemPath, "-type", "f", "-printf", "%P\\n"])
            .split(separator: "\n").map(String.init).sorted()
    }

}
