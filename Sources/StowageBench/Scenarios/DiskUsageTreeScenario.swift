import Foundation
import StowageCore

/// `disk-usage.tree-100k`: measure 100,000 small files in 1,000 directories.
///
/// Baselines: `du -s -B1` as a subprocess (the reference: Stowage's allocated bytes must equal
/// its output) and FileManager's enumerator summing `totalFileAllocatedSize`, the way iOS
/// cache-clearing tools and most Swift code do it.
struct DiskUsageTreeScenario: Scenario {
    let name = "disk-usage.tree-100k"

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        BenchContext.progress("preparing the fixture tree (first run only; 100k files)…")
        let tree = try FixtureTree.make(
            at: context.fixtures.appending(path: "tree-100k"),
            directories: 1_000,
            filesPerDirectory: 100
        )

        // Warm the dentry and inode caches so that every contender reads from memory.
        _ = try Subprocess.du(tree)
        _ = try await DiskUsage.measure(tree)

        var stowageTimes: [Double] = []
        var duTimes: [Double] = []
        var stowageBytes = ByteCount.zero
        var duBytes: Int64 = 0
        // Interleaved, so drift in the machine's load hits both alike.
        for _ in 0..<context.iterations {
            let stowage = try BenchContext.median(1) { try DiskUsage.measure(tree) }
            stowageTimes.append(stowage.seconds)
            stowageBytes = stowage.result.allocatedBytes
            let reference = try BenchContext.median(1) { try Subprocess.du(tree) }
            duTimes.append(reference.seconds)
            duBytes = reference.result
        }
        let foundation = BenchContext.median(max(1, context.iterations / 3)) { fileManagerTotal(tree) }

        let ok = stowageBytes.rawValue == duBytes
        return ScenarioResult(
            name: name,
            unit: "s",
            stowage: median(stowageTimes),
            baselines: ["du": median(duTimes), "FileManager": foundation.seconds],
            ok: ok,
            notes: "allocated bytes: stowage \(stowageBytes.rawValue), du \(duBytes), FileManager \(foundation.result)"
                + (foundation.result == duBytes ? "" : " (FileManager disagrees with du)")
        )
    }

    /// What most Swift code does: enumerate with FileManager and sum `totalFileAllocatedSize`.
    private func fileManagerTotal(_ url: URL) -> Int64 {
        let keys: [URLResourceKey] = [.totalFileAllocatedSizeKey]
        guard let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: keys) else {
            return 0
        }
        var total: Int64 = 0
        for case let file as URL in enumerator {
            total += Int64((try? file.resourceValues(forKeys: Set(keys)))?.totalFileAllocatedSize ?? 0)
        }
        return total
    }
}
