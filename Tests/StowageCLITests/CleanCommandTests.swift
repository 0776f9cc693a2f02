import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("stowage clean, purgeable, purge end to end")
struct CleanCommandTests {
    /// Writes `bytes` bytes at `relative` under `root`, optionally `daysOld` days old (utimensat).
    @discardableResult
    func file(_ root: URL, _ relative: String, bytes: Int = 5_000, daysOld: Double? = nil) async throws -> URL {
        let url = root.appending(path: relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 1, count: bytes).write(to: url)
        if let daysOld {
            let seconds = Date().timeIntervalSince1970 - daysOld * 86_400
            var times = [timespec](repeating: timespec(tv_sec: Int(seconds), tv_nsec: 0), count: 2)
            guard utimensat(AT_FDCWD, url.path, &times, 0) == 0 else { throw TestFailure("utimensat failed") }
        }
        return url
    }

    func exists(_ root: URL, _ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: root.appending(path: relative).path)
    }

    // MARK: - clean

    @Test("clean --dry-run reports what would be freed and deletes nothing")
    func dryRun() async throws {
        try await withTemporaryDirectory { root in
            try await file(root, "Library/Caches/img/a.jpg", bytes: 100_000)
            try await file(root, "Library/Caches/img/b.txt")
            let manifest = root.appending(path: "clean.json")
            try Data(#"[{"Path": "Library/Caches/img", "Entries": ["*.jpg"]}]"#.utf8).write(to: manifest)
            let outcome = try await StowageExecutable.run([
                "clean", "--root", root.path, "--manifest", manifest.path, "--dry-run",
            ])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(outcome.standardOutput.contains("would free 102.40KB (dry run: nothing was deleted)"))
            #expect(exists(root, "Library/Caches/img/a.jpg") && exists(root, "Library/Caches/img/b.txt"))
            // Not a terminal: plain phase lines on standard error.
            #expect(outcome.standardError.contains("pre-calculating 100%"))
            #expect(!outcome.standardError.contains("cleaning"))
        }
    }

    @Test("clean runs a PurgeableCache.plist: path tasks clean, the unregistered Class fails, exit 1, summary 'freed'")
    func xcodeWrittenPlist() async throws {
        try await withTemporaryDirectory { root in
            try await file(root, "Documents/Caches/x.tmp", bytes: 12_000)
            try await file(root, "Documents/Caches/image_1.png", bytes: 12_000)
            try await file(root, "Documents/Caches/notes.txt")
            try await file(root, "Library/Caches/WebCache/blob", bytes: 12_000)
            let manifest = root.appending(path: "PurgeableCache.plist")
            try Data(purgeableCachePlist.utf8).write(to: manifest)
            let outcome = try await StowageExecutable.run(["clean", "--root", root.path, "--manifest", manifest.path])
            #expect(outcome.status == 1, "a task failed: \(outcome.standardError)")
            #expect(outcome.standardError.contains("APCacheCleanHandler.cleanMemoryCache"))
            #expect(!exists(root, "Documents/Caches/x.tmp") && !exists(root, "Documents/Caches/image_1.png"))
            #expect(exists(root, "Documents/Caches/notes.txt"))
            #expect(!exists(root, "Library/Caches/WebCache/blob") && exists(root, "Library/Caches/WebCache"))
            #expect(outcome.standardOutput.contains("freed 36.86KB"), "\(outcome.standardOutput)")
            for phase in ["pre-calculating", "cleaning", "post-calculating"] {
                #expect(outcome.standardError.contains("\(phase) 100%"))
            }
        }
    }

    @Test("clean --json prints one document with bytes freed per task")
    func json() async throws {
        try await withTemporaryDirectory { root in
            try await file(root, "tmp/upload/part", bytes: 8_192)
            let manifest = root.appending(path: "clean.json")
            try Data(#"[{"Path": "tmp/upload"}, {"Path": "/etc"}]"#.utf8).write(to: manifest)
            let outcome = try await StowageExecutable.run([
                "clean", "--root", root.path, "--manifest", manifest.path, "--json",
            ])
            #expect(outcome.status == 1)
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            )
            let tasks = try #require(object["tasks"] as? [[String: Any]])
            #expect(tasks[0]["bytesFreed"] as? Int == 8_192)
            let error = try #require(tasks[1]["error"] as? [String: Any])
            #expect(error["code"] as? String == "path escapes root")
            #expect(FileManager.default.fileExists(atPath: "/etc/hostname"))
        }
    }

    @Test("a malformed manifest exits 2 naming the line and deletes nothing")
    func malformed() async throws {
        try await withTemporaryDirectory { root in
            try await file(root, "Library/Caches/a")
            let manifest = root.appending(path: "clean.json")
            try Data("[{\"Path\": \"Library/Caches\"},\n {\"Path\": }]".utf8).write(to: manifest)
            let outcome = try await StowageExecutable.run(["clean", "--root", root.path, "--manifest", manifest.path])
            #expect(outcome.status == 2)
            #expect(outcome.standardError.contains("line 2"), "\(outcome.standardError)")
            #expect(exists(root, "Library/Caches/a"))
        }
    }

    // MARK: - purgeable and purge

    @Test("purgeable list's size is what purge --reset-all then frees: the directory's own blocks stay with it")
    func purgeableListSizeIsWhatAResetFrees() async throws {
        try await withTemporaryDirectory { root in
            let add = try await StowageExecutable.run([
                "purgeable", "add", "Library/Caches/feeds", "--policy", "manual", "--root", root.path,
            ])
            try #require(add.status == 0, "\(add.standardError)")
            try await file(root, "Library/Caches/feeds/sub/a", daysOld: 1)
            try await file(root, "Library/Caches/feeds/b", daysOld: 1)
            func listed() async throws -> Int? {
                let list = try await StowageExecutable.run(["purgeable", "list", "--root", root.path, "--json"])
                let rows = try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [[String: Any]]
                return rows?.first?["allocatedBytes"] as? Int
            }
            let before = try #require(try await listed())
            let reset = try await StowageExecutable.run(["purge", "--reset-all", "--json", "--root", root.path])
            try #require(reset.status == 0, "\(reset.standardError)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(reset.standardOutput.utf8)) as? [String: Any]
            )
            let freed = try #require((report["directories"] as? [[String: Any]])?.first?["bytesFreed"] as? Int)
            #expect(before == freed, "listed \(before), freed \(freed)")
            #expect(try await listed() == 0, "an emptied directory holds nothing a purge could free")
        }
    }

    @Test("purgeable add/list/remove and purge sweep by policy, --reset-all empties")
    func purgeable() async throws {
        try await withTemporaryDirectory { root in
            let add = try await StowageExecutable.run([
                "purgeable", "add", "Library/Caches/feeds", "--policy", "7d", "--cap", "200MB", "--root", root.path,
            ])
            #expect(add.status == 0, "\(add.standardError)")
            #expect(exists(root, "Library/Caches/feeds"))
            _ = try await StowageExecutable.run([
                "purgeable", "add", "Documents/Drafts", "--policy", "manual", "--root", root.path,
            ])
            let list = try await StowageExecutable.run(["purgeable", "list", "--root", root.path, "--json"])
            let rows = try #require(
                try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [[String: Any]]
            )
            #expect(rows.map { $0["path"] as? String } == ["Library/Caches/feeds", "Documents/Drafts"])
            #expect(rows[0]["policy"] as? String == "7d" && rows[0]["sizeCap"] as? Int == 200_000_000)

            try await file(root, "Library/Caches/feeds/old", daysOld: 10)
            try await file(root, "Library/Caches/feeds/new", daysOld: 1)
            try await file(root, "Documents/Drafts/ancient", daysOld: 400)
            let sweep = try await StowageExecutable.run(["purge", "--root", root.path])
            #expect(sweep.status == 0, "\(sweep.standardError)")
            #expect(sweep.standardOutput.contains("freed "))
            #expect(!exists(root, "Library/Caches/feeds/old") && exists(root, "Library/Caches/feeds/new"))
            #expect(exists(root, "Documents/Drafts/ancient"), "manual is not swept")

            let reset = try await StowageExecutable.run(["purge", "--reset-all", "--json", "--root", root.path])
            #expect(reset.status == 0)
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(reset.standardOutput.utf8)) as? [String: Any]
            )
            #expect((report["directories"] as? [Any])?.count == 2)
            #expect(!exists(root, "Documents/Drafts/ancient") && !exists(root, "Library/Caches/feeds/new"))

            #expect(
                try await StowageExecutable.run(["purgeable", "remove", "Documents/Drafts", "--root", root.path]).status
                    == 0
            )
            let missing = try await StowageExecutable.run([
                "purgeable", "remove", "Documents/Drafts", "--root", root.path,
            ])
            #expect(missing.status == 1)
            let bad = try await StowageExecutable.run([
                "purgeable", "add", "/etc", "--policy", "7d", "--root", root.path,
            ])
            #expect(bad.status == 2 && bad.standardError.contains("absolute"))
            let badPolicy = try await StowageExecutable.run([
                "purgeable", "add", "tmp/x", "--policy", "weekly", "--root", root.path,
            ])
            #expect(badPolicy.status == 64)
        }
    }

    @Test("purge --marked removes marked items oldest first: --free SIZE, --free all, --dry-run, and no pressure")
    func purgeMarked() async throws {
        try await withTemporaryDirectory { root in
            /// The two marked exports, old and new, made again after a purge that took them.
            func makeMarkedExports() async throws {
                let old = try await file(root, "Documents/exports/old.zip", bytes: 40_960, daysOld: 30)
                let new = try await file(root, "Documents/exports/new.zip", bytes: 40_960, daysOld: 2)
                try Marks.setPurgeable(true, at: old)
                try Marks.setPurgeable(true, at: new)
            }
            _ = try await file(root, "Documents/keep.txt", daysOld: 400)
            do {
                try await makeMarkedExports()
            } catch StowageError.Code.unsupported {
                return  // No user xattrs on this file system: nothing can be marked.
            }

            let dry = try await StowageExecutable.run([
                "purge", "--marked", "--free", "1KB", "--dry-run", "--root", root.path,
            ])
            #expect(dry.status == 0, "\(dry.standardError)")
            #expect(dry.standardOutput.contains("old.zip") && !dry.standardOutput.contains("new.zip"))
            #expect(exists(root, "Documents/exports/old.zip"), "a dry run removes nothing")

            // Without --free, marked items go only while the volume is short of space: on a volume
            // with room nothing goes, and it says why; on one under pressure (less than a tenth of
            // it free for opportunistic data, as a shared build machine's can be) they go, oldest
            // first, and are made again for the steps below.
            let calm = try await StowageExecutable.run(["purge", "--marked", "--root", root.path])
            #expect(calm.status == 0, "\(calm.standardError)")
            if calm.standardOutput.contains("no storage pressure") {
                #expect(exists(root, "Documents/exports/old.zip"))
            } else {
                #expect(!exists(root, "Documents/exports/old.zip"), "under pressure the oldest goes first")
                #expect(exists(root, "Documents/keep.txt"), "an unmarked file stays")
                try await makeMarkedExports()
            }

            let some = try await StowageExecutable.run([
                "purge", "--marked", "--free", "1KB", "--json", "--root", root.path,
            ])
            #expect(some.status == 0, "\(some.standardError)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(some.standardOutput.utf8)) as? [String: Any]
            )
            let removed = try #require(report["removed"] as? [[String: Any]])
            #expect(removed.map { ($0["path"] as? String)?.hasSuffix("/old.zip") } == [true])
            #expect(report["remaining"] as? Int == 1)
            #expect(!exists(root, "Documents/exports/old.zip") && exists(root, "Documents/exports/new.zip"))

            let all = try await StowageExecutable.run(["purge", "--marked", "--free", "all", "--root", root.path])
            #expect(all.status == 0 && all.standardOutput.contains("0 marked items left"), "\(all.standardOutput)")
            #expect(!exists(root, "Documents/exports/new.zip") && exists(root, "Documents/keep.txt"))

            let refused: [[String]] = [
                ["--marked", "--free", "-5MB"], ["--marked", "--free", "lots"], ["--marked", "--free", "nan"],
                ["--marked", "--reset-all"], ["--dry-run"], ["--free", "1MB"],
            ]
            for arguments in refused {
                let outcome = try await StowageExecutable.run(["purge"] + arguments + ["--root", root.path])
                #expect(outcome.status == 64, "\(arguments): \(outcome.standardError)")
            }
        }
    }

    @Test("--time-limit: a spent limit stops purge and clean with exit 0 and says so; bad limits are usage errors")
    func timeLimitOption() async throws {
        try await withTemporaryDirectory { root in
            _ = try await StowageExecutable.run([
                "purgeable", "add", "Library/Caches/feeds", "--policy", "7d", "--root", root.path,
            ])
            for index in 0..<20 { _ = try await file(root, "Library/Caches/feeds/\(index)", daysOld: 30) }
            // A microsecond is spent before the first file is examined.
            let cut = try await StowageExecutable.run(["purge", "--time-limit", "0.000001", "--root", root.path])
            #expect(cut.status == 0, "\(cut.standardError)")
            #expect(cut.standardOutput.contains("stopped at the time limit"), "\(cut.standardOutput)")
            #expect(cut.standardOutput.contains("(time limit)"))

            let json = try await StowageExecutable.run([
                "purge", "--time-limit", "0.000001", "--json", "--root", root.path,
            ])
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
            )
            let directories = try #require(report["directories"] as? [[String: Any]])
            #expect(directories.first?["reachedTimeLimit"] as? Bool == true)

            let full = try await StowageExecutable.run(["purge", "--time-limit", "1h", "--root", root.path])
            #expect(full.status == 0 && !full.standardOutput.contains("time limit"), "\(full.standardOutput)")
            #expect(!exists(root, "Library/Caches/feeds/0"))

            for bad in ["0", "-1s", "nan", "inf", "1e300", "99999999999", "soon", ""] {
                for command in [["purge"], ["purge", "--marked", "--free", "all"]] {
                    let outcome = try await StowageExecutable.run(command + ["--time-limit", bad, "--root", root.path])
                    #expect(
                        outcome.status == 64,
                        "\(command) --time-limit \(bad.debugDescription): \(outcome.standardError)"
                    )
                }
            }
            let manifest = root.appending(path: "manifest.json")
            try Data(#"[{"Path": "Library/Caches/feeds"}]"#.utf8).write(to: manifest)
            let clean = try await StowageExecutable.run([
                "clean", "--manifest", manifest.path, "--time-limit", "0", "--root", root.path,
            ])
            #expect(clean.status == 64, "\(clean.standardError)")
        }
    }

    @Test("--time-limit shorter than a nanosecond is a usage error that says so, not 'must be more than zero'")
    func timeLimitBelowNanosecond() async throws {
        try await withTemporaryDirectory { root in
            for limit in ["1e-10", "0.0000000001", "1e-300"] {
                let outcome = try await StowageExecutable.run(["purge", "--time-limit", limit, "--root", root.path])
                #expect(outcome.status == 64)
                #expect(outcome.standardError.contains("at least a nanosecond"), "\(limit): \(outcome.standardError)")
            }
        }
    }

    @Test("purge --marked measures a wide marked directory whole under a small descriptor limit")
    func purgeMarkedWideDirectory() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else { return }
        try await withTemporaryDirectory { root in
            for index in 0..<300 { _ = try await file(root, "Documents/wide/d\(index)/f", bytes: 4_096) }
            do {
                try Marks.setPurgeable(true, at: root.appending(path: "Documents/wide"))
            } catch StowageError.Code.unsupported {
                return
            }
            // Measuring opened every subdirectory it listed before descending into any: with 64
            // descriptors most failed, silently, and the directory looked a fraction of its size.
            let outcome = try await StowageExecutable.run(
                ["purge", "--marked", "--free", "all", "--dry-run", "--json", "--root", root.path],
                wrapper: ["prlimit", "--nofile=64", "--"]
            )
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            )
            #expect((report["bytes"] as? Int ?? 0) >= 300 * 8_192, "\(outcome.standardOutput)")
        }
    }
}
