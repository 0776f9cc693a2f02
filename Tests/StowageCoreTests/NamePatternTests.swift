import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `du --exclude=PATTERN -s -B1` is the reference: names that match are skipped with their subtree.
@Suite("NamePattern and DiskUsage exclusion")
struct NamePatternTests {
    // MARK: - Matching

    @Test(
        "patterns match names as fnmatch(3) with no flags does",
        arguments: [
            (".DS*", ".DS_Store", true), (".DS*", "x.DS_Store", false), ("*", ".hidden", true),
            ("*.log", "a.log", true), ("*.log", "a.log.1", false), ("?.tmp", "q.tmp", true),
            ("?.tmp", "qq.tmp", false), ("[Tt]humbs.db", "thumbs.db", true), ("[!a]*", "abc", false),
            ("\\*", "*", true), ("\\*", "a", false), ("node_modules", "node_modules", true),
        ]
    )
    func matching(pattern: String, name: String, matches: Bool) throws {
        #expect(try NamePattern(pattern).matches(name) == matches)
    }

    @Test(
        "empty patterns, NUL, '/' and over-long patterns are refused with the reason",
        arguments: [
            ("", "empty"), ("a\u{0}b", "NUL"), ("a/b", "'/'"), ("/", "'/'"),
            (String(repeating: "x", count: 1_025), "limit"),
        ]
    )
    func refused(pattern: String, reason: String) {
        #expect {
            try NamePattern(pattern)
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .invalidArgument && error.message.contains(reason)
                && error.message.contains("exclusion pattern")
        }
    }

    // MARK: - DiskUsage with exclusions

    /// Matching files and directories at several depths, hard links across the excluded and kept
    /// parts, and the Finder's `.DS_Store` files a folder-size count skips.
    private func makeTree() throws -> TemporaryDirectory {
        let scratch = try TemporaryDirectory()
        try scratch.write(".DS_Store", bytes: 6_148)
        try scratch.write("photos/.DS_Store", bytes: 10_244)
        try scratch.write("photos/a.jpg", bytes: 90_000)
        try scratch.write(".DS_dir/inside.bin", bytes: 20_000)
        try scratch.write("node_modules/pkg/index.js", bytes: 30_000)
        try scratch.write("node_modules/big.bin", bytes: 120_000)
        try scratch.write("logs/app.log", bytes: 50_000)
        try scratch.write("logs/deep/old.log", bytes: 8_000)
        try scratch.write("logs/keep.txt", bytes: 5_000)
        try scratch.write("Thumbs.db", bytes: 3_000)
        try scratch.write("q.tmp", bytes: 4_000)
        try scratch.write("kept/doc.txt", bytes: 40_000)
        // A kept link to an excluded file counts (du never looks at the excluded one); a link
        // named like an excluded file is skipped while the original counts.
        #expect(link(scratch.path + "/node_modules/big.bin", scratch.path + "/kept/big-link") == 0)
        #expect(link(scratch.path + "/kept/doc.txt", scratch.path + "/kept/doc.log") == 0)
        #expect(link(scratch.path + "/kept/doc.txt", scratch.path + "/photos/doc-again") == 0)
        try scratch.symlink("kept/link-to-logs", to: scratch.path + "/logs")
        return scratch
    }

    @Test(
        "allocated bytes equal du --exclude -s -B1 for each pattern set",
        arguments: [
            [".DS*"], ["*.log"], ["node_modules"], ["[Tt]humbs.db", "?.tmp"], ["logs"], ["nothing-matches"],
            [".DS*", "*.log", "node_modules", "[Tt]humbs.db", "?.tmp"],
        ]
    )
    func matchesDu(patterns: [String]) async throws {
        let scratch = try makeTree()
        let options = DiskUsage.Options(excluding: try patterns.map { try NamePattern($0) })
        let usage = try await DiskUsage.measure(scratch.url, options: options)
        let expected = try duAllocatedBytes(scratch.path, extraArguments: patterns.map { "--exclude=\($0)" })
        #expect(usage.allocatedBytes.rawValue == expected)
        #expect(usage.issues.isEmpty)
    }

    @Test("excluded names are neither counted nor listed among the children")
    func countsAndChildren() throws {
        let scratch = try makeTree()
        let all = try DiskUsage.measure(scratch.url, options: DiskUsage.Options(includesChildren: true))
        let options = DiskUsage.Options(
            includesChildren: true,
            excluding: [try NamePattern(".DS*"), try NamePattern("node_modules")]
        )
        let usage = try DiskUsage.measure(scratch.url, options: options)
        let names = Set(usage.children.map(\.name))
        #expect(!names.contains(".DS_Store") && !names.contains(".DS_dir") && !names.contains("node_modules"))
        #expect(names.contains("photos") && names.contains("kept"))
        // Two .DS_Store files and .DS_dir/inside.bin, index.js; big.bin still counts through kept/big-link.
        #expect(usage.fileCount == all.fileCount - 4)
        // Root, photos, logs, logs/deep, kept: .DS_dir, node_modules and node_modules/pkg are gone.
        #expect(usage.directoryCount == all.directoryCount - 3)
        let childSum = usage.children.reduce(Int64(0)) { $0 + $1.totals.allocatedBytes.rawValue }
        #expect(usage.allocatedBytes.rawValue - childSum > 0)  // the root's own blocks
    }

    @Test("the measured path itself is measured even when its name matches")
    func rootIsAlwaysMeasured() throws {
        let scratch = try TemporaryDirectory()
        let file = try scratch.write("notes.log", bytes: 9_000)
        let usage = try DiskUsage.measure(file, options: DiskUsage.Options(excluding: [try NamePattern("*.log")]))
        #expect(usage.fileCount == 1)
        #expect(usage.logicalBytes.rawValue == 9_000)
    }
}
