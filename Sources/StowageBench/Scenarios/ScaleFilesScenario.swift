import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `scale.files.*`: ``DiskUsage``, the cache cleaner and the purge sweep on trees of n files
/// (the sizes of `STOWAGE_BENCH_SCALE_SIZES` up to 10^6; default 10^4, the smoke run), each
/// beside its Unix peer in the same run, on the real disk under the fixtures directory.
///
/// The trees have n / 100 directories (in groups of 100) of 100 files of 0–1 KiB each, plus one
/// hard link and one symbolic link per directory, as the 100,000-file scenarios' trees.
///
/// - `disk-usage-<n>`: `DiskUsage.measure` against `du -s -B1` (a subprocess) on one tree kept
///   between runs; both are run once first to warm the dentry and inode caches, then they take
///   turns, the first alternating. `ok`: Stowage's allocated bytes equal du's.
/// - `clean-<n>`: a manifest task that empties the tree, the whole run timed (pre-calculating,
///   cleaning, post-calculating, the report), against `rm -rf` of the same tree.
///   `ok`: the directory is empty and the bytes freed equal `du -s -B1` of its contents.
/// - `purge-<n>`: the sweep of a registered directory with a 7-day policy whose odd files are 30
///   days old, against `find DIR -type f -mtime +7 -delete`. `ok`: both left the same files.
///
/// For the clean and the purge each contender gets a tree made afresh, written back (`sync`) and
/// walked once by `du` before its timing, so both start from the same warm, clean page cache;
/// which one goes first alternates between repetitions.
struct ScaleFilesScenario: Scenario {
    let name = "scale.files"
    /// Larger sizes of `STOWAGE_BENCH_SCALE_SIZES` are skipped: 10^7 files would take 40 GB here.
    static let largestSize = 1_000_000
    static let filesPerDirectory = 100
    static let largestFile = 1_024

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        guard let first = try await results(context).first else { throw BenchFailure("no scale size to run") }
        return first
    }

    func results(_ context: BenchContext) async throws -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for size in ScaleScenario.sizes() {
            guard size >= Self.filesPerDirectory, size <= Self.largestSize else {
                BenchContext.progress("scale.files: \(size) files skipped (sizes 100…\(Self.largestSize) run)")
                continue
            }
            BenchContext.progress("scale.files: \(size) files")
            results.append(try diskUsage(size: size, context))
            results.append(try await clean(size: size, context))
            results.append(try await purge(size: size, context))
        }
        return results
    }

    private static func makeTree(at root: URL, size: Int, oldOddFiles: Bool = false) throws -> URL {
        try FixtureTree.make(
            at: root,
            directories: size / filesPerDirectory,
            filesPerDirectory: filesPerDirectory,
            largestFile: largestFile,
            seed: 0x5CA1_EF11,
            links: !oldOddFiles,
            oddFilesAge: oldOddFiles ? .seconds(30 * 86_400) : nil
        )
    }

    /// Writes every dirty page back and walks `tree` with `du`, so that the timing that follows
    /// starts from the same state whoever it times; returns du's allocated bytes.
    private static func settle(_ tree: URL) throws -> Int64 {
        try Subprocess.run(["sync"])
        return try Subprocess.du(tree)
    }

    private static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return Subprocess.seconds(clock.now - start)
    }

    // MARK: - DiskUsage against du

    private func diskUsage(size: Int, _ context: BenchContext) throws -> ScenarioResult {
        BenchContext.progress("scale.files: the disk-usage tree of \(size) files (kept between runs)…")
        let tree = try Self.makeTree(
            at: context.fixtures.appending(path: "scale-tree-\(ScaleScenario.label(size))"),
            size: size
        )
        // Warm the dentry and inode caches for both.
        _ = try Self.settle(tree)
        _ = try DiskUsage.measure(tree)
        var stowageTimes: [Double] = []
        var duTimes: [Double] = []
        var stowageBytes = ByteCount.zero
        var duBytes: Int64 = 0
        var entries = 0
        for iteration in 0..<context.iterations {
            for contender in iteration.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                if contender == 0 {
                    let stowage = try BenchContext.median(1) { try DiskUsage.measure(tree) }
                    stowageTimes.append(stowage.seconds)
                    stowageBytes = stowage.result.allocatedBytes
                    entries =
                        stowage.result.fileCount + stowage.result.directoryCount + stowage.result.totals.otherCount
                } else {
                    let reference = try BenchContext.median(1) { try Subprocess.du(tree) }
                    duTimes.append(reference.seconds)
                    duBytes = reference.result
                }
            }
        }
        return ScenarioResult(
            name: "\(name).disk-usage-\(ScaleScenario.label(size))",
            unit: "s",
            stowage: median(stowageTimes),
            baselines: ["du": median(duTimes)],
            ok: stowageBytes.rawValue == duBytes,
            notes: "\(entries) entries (\(size) files of 0-1 KiB, hard and symbolic links); allocated bytes: stowage "
                + "\(stowageBytes.rawValue), du -s -B1 \(duBytes); median of \(context.iterations), order alternating; "
                + ScaleScenario.loadAverage()
        )
    }

    // MARK: - The cleaner against rm -rf

    private func clean(size: Int, _ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "scale-clean-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let container = Container(root: root)
        let tree = container.url(for: .caches).appending(path: "tree")
        try FileManager.default.createDirectory(
            at: tree.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        let cleaner = CacheCleaner(container: container)
        let manifest = CleanManifest(tasks: [.path("Library/Caches/tree", entries: [])])
        var stowageTimes: [Double] = []
        var rmTimes: [Double] = []
        var ok = true
        var notes = ""
        for repetition in 0..<min(context.iterations, 3) {
            for contender in repetition.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                BenchContext.progress(
                    "scale.files: making a tree of \(size) files to \(contender == 0 ? "clean" : "rm -rf")…"
                )
                _ = try Self.makeTree(at: tree, size: size)
                // du counts the tree's own directory, which the task keeps.
                let expected = try Self.settle(tree) - Self.directoryBlocks(tree)
                if contender == 1 {
                    rmTimes.append(try Subprocess.time(["rm", "-rf", tree.fileSystemPath]))
                    continue
                }
                var report: CleanReport?
                stowageTimes.append(try await Self.seconds { report = try await cleaner.clean(manifest) })
                let left = try FileManager.default.contentsOfDirectory(atPath: tree.fileSystemPath).count
                guard let report else { throw BenchFailure("the cleaner returned no report") }
                if left != 0 || report.bytesFreed.rawValue != expected || !report.isComplete { ok = false }
                notes =
                    "freed \(report.bytesFreed.rawValue) B (du of the contents: \(expected) B), "
                    + "\(report.tasks[0].entriesRemoved) entries removed, \(left) left; pre- and post-calculation "
                    + "included; each contender on a fresh tree, synced and walked by du first"
                try Subprocess.run(["rm", "-rf", tree.fileSystemPath])
            }
        }
        return ScenarioResult(
            name: "\(name).clean-\(ScaleScenario.label(size))",
            unit: "s",
            stowage: median(stowageTimes),
            baselines: ["rm -rf": median(rmTimes)],
            ok: ok,
            notes: notes + "; median of \(stowageTimes.count), order alternating; " + ScaleScenario.loadAverage()
        )
    }

    private static func directoryBlocks(_ url: URL) throws -> Int64 {
        var status = stat()
        guard lstat(url.fileSystemPath, &status) == 0 else { throw BenchFailure("cannot stat \(url.fileSystemPath)") }
        return Int64(status.st_blocks) * 512
    }

    // MARK: - The purge sweep against find -delete

    private func purge(size: Int, _ context: BenchContext) async throws -> ScenarioResult {
        let root = context.fixtures.appending(path: "scale-purge-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let container = Container(root: root)
        let purgeable = PurgeableDirectories(container: container)
        let directory = try await purgeable.register("Library/Caches/sweep", policy: .oneWeek)
        var stowageTimes: [Double] = []
        var findTimes: [Double] = []
        var stowageLeft: [String] = []
        var findLeft: [String] = []
        var ok = true
        var removed = 0
        for repetition in 0..<min(context.iterations, 3) {
            for contender in repetition.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                BenchContext.progress(
                    "scale.files: making a tree of \(size) files to \(contender == 0 ? "sweep" : "find -delete")…"
                )
                try Subprocess.run(["rm", "-rf", directory.fileSystemPath])
                _ = try Self.makeTree(at: directory, size: size, oldOddFiles: true)
                try FileManager.default.removeItem(at: directory.appending(path: ".complete"))
                _ = try Self.settle(directory)
                if contender == 1 {
                    findTimes.append(
                        try Subprocess.time(["find", directory.fileSystemPath, "-type", "f", "-mtime", "+7", "-delete"])
                    )
                    findLeft = try Self.remainingFiles(directory)
                    continue
                }
                var report: PurgeReport?
                stowageTimes.append(try await Self.seconds { report = try await purgeable.sweep() })
                stowageLeft = try Self.remainingFiles(directory)
                guard let report else { throw BenchFailure("the sweep returned no report") }
                removed = report.removedCount
                if !report.isComplete || stowageLeft.count != size / 2 { ok = false }
            }
            if stowageLeft != findLeft { ok = false }
        }
        return ScenarioResult(
            name: "\(name).purge-\(ScaleScenario.label(size))",
            unit: "s",
            stowage: median(stowageTimes),
            baselines: ["find -mtime -delete": median(findTimes)],
            ok: ok,
            notes:
                "\(size) files of 0-1 KiB, the odd half 30 days old, 7-day policy; removed \(removed); left: stowage "
                + "\(stowageLeft.count), find \(findLeft.count)\(stowageLeft == findLeft ? " (the same files)" : " (DIFFERENT)"); "
                + "each contender on a fresh tree, synced and walked by du first; median of \(stowageTimes.count), "
                + "order alternating; " + ScaleScenario.loadAverage()
        )
    }

    private static func remainingFiles(_ directory: URL) throws -> [String] {
        try Subprocess.run(["find", directory.fileSystemPath, "-type", "f", "-printf", "%P\\n"])
            .split(separator: "\n").map(String.init).sorted()
    }

    /// Goals from issue 46, by result name.
    static let targets: [String: [BenchTarget]] = {
        var targets: [String: [BenchTarget]] = [:]
        for label in ["1e4", "1e5", "1e6"] {
            targets["scale.files.disk-usage-\(label)"] = [.ratio(atMost: 1.2, against: "du", "within 1.2x du")]
            targets["scale.files.clean-\(label)"] = [.ratio(atMost: 1.5, against: "rm -rf", "within 1.5x rm -rf")]
            targets["scale.files.purge-\(label)"] = [
                .ratio(atMost: 1.5, against: "find -mtime -delete", "within 1.5x find -delete")
            ]
        }
        return targets
    }()
}
