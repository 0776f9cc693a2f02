import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cleaner.clean-100k`: a manifest task that empties a 100,000-file tree (1,000 directories,
/// hard links and symbolic links), the whole run timed: pre-calculating, cleaning,
/// post-calculating and the report.
///
/// Baseline: `rm -rf` on the same tree as a subprocess (process start included), which deletes
/// and measures nothing. Each repetition copies the fixture (`cp -a`, outside the timed region)
/// for each contender. `ok` means Stowage left the directory empty and its bytes freed equal
/// `du -s -B1` of the tree's contents.
struct CleanerScenario: Scenario {
    let name = "cleaner.clean-100k"

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        BenchContext.progress("preparing the fixture tree (first run only; 100k files)…")
        let template = try FixtureTree.make(
            at: context.fixtures.appending(path: "tree-100k"),
            directories: 1_000,
            filesPerDirectory: 100
        )
        let root = context.fixtures.appending(path: "cleaner-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let container = Container(root: root)
        let tree = container.url(for: .caches).appending(path: "tree")
        let cleaner = CacheCleaner(container: container)
        let manifest = CleanManifest(tasks: [.path("Library/Caches/tree", entries: [])])
        // Copying 100k files takes seconds: three repetitions give a stable median.
        let repetitions = min(context.iterations, 3)

        var stowageTimes: [Double] = []
        var rmTimes: [Double] = []
        var ok = true
        var notes = ""
        for _ in 0..<repetitions {
            try copy(template, to: tree)
            // du counts the tree's own directory, which the task keeps.
            let expected = try Subprocess.du(tree) - directoryBlocks(tree)
            let clock = ContinuousClock()
            let start = clock.now
            let report = try await cleaner.clean(manifest)
            stowageTimes.append(Subprocess.seconds(clock.now - start))
            let left = try FileManager.default.contentsOfDirectory(atPath: tree.fileSystemPath).count
            if left != 0 || report.bytesFreed.rawValue != expected || !report.isComplete {
                ok = false
            }
            notes =
                "freed \(report.bytesFreed.rawValue) B (du of the contents: \(expected) B), "
                + "\(report.tasks[0].entriesRemoved) entries removed, \(left) left; pre- and post-calculation included"

            try copy(template, to: tree)
            rmTimes.append(try Subprocess.time(["rm", "-rf", tree.fileSystemPath]))
        }
        return ScenarioResult(
            name: name,
            unit: "s",
            stowage: median(stowageTimes),
            baselines: ["rm -rf": median(rmTimes)],
            ok: ok,
            notes: notes
        )
    }

    private func copy(_ template: URL, to destination: URL) throws {
        if FileManager.default.fileExists(atPath: destination.fileSystemPath) {
            try Subprocess.run(["rm", "-rf", destination.fileSystemPath])
        }
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try Subprocess.run(["cp", "-a", template.fileSystemPath, destination.fileSystemPath])
    }

    private func directoryBlocks(_ url: URL) throws -> Int64 {
        var status = stat()
        guard lstat(url.fileSystemPath, &status) == 0 else { throw BenchFailure("cannot stat \(url.fileSystemPath)") }
        return Int64(status.st_blocks) * 512
    }

}
