import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("stowage end to end")
struct CommandTests {
    // MARK: - report

    @Test("report --json parses and lists all five locations with their marks")
    func reportJSON() async throws {
        try await withTemporaryDirectory { root in
            let outcome = try await StowageExecutable.run(["report", "--root", root.path, "--json"])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let object = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            let locations = try #require(object?["locations"] as? [[String: Any]])
            #expect(
                locations.compactMap { $0["location"] as? String }
                    == ["documents", "applicationSupport", "caches", "preferences", "temporary"]
            )
            let caches = try #require(locations.first { $0["location"] as? String == "caches" })
            #expect(caches["path"] as? String == root.path + "/Library/Caches")
            #expect(caches["excludedFromBackup"] as? String == "set")
            #expect(caches["hasCacheDirectoryTag"] as? Bool == true)
            let documents = try #require(locations.first { $0["location"] as? String == "documents" })
            #expect(documents["excludedFromBackup"] as? String == "unset")
            let capacity = try #require(caches["capacity"] as? [String: Any])
            #expect((capacity["total"] as? Int64 ?? 0) > 0)
        }
    }

    @Test("report exits 1 when entries cannot be read, with --json as without")
    func reportIssuesExitStatus() async throws {
        // Root reads everything, so drop to 'nobody' with setpriv and give it the container.
        let asNobody = geteuid() == 0
        let wrapper = asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        try await withTemporaryDirectory { root in
            let first = try await StowageExecutable.run(["report", "--root", root.path, "--json"])
            #expect(first.status == 0, "\(first.standardError)")
            let locked = root.appending(path: "Documents/locked")
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            if asNobody {
                chmod(root.path, 0o755)
                _ = try await StowageExecutable.runProcess(["chown", "-R", "65534:65534", root.path])
            }
            chmod(locked.path, 0o000)
            defer { chmod(locked.path, 0o755) }

            let json = try await StowageExecutable.run(["report", "--root", root.path, "--json"], wrapper: wrapper)
            #expect(json.status == 1, "\(json.standardError)")
            #expect(json.standardError.contains(locked.path) && json.standardError.contains("EACCES"))
            #expect(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) is [String: Any])
            let text = try await StowageExecutable.run(["report", "--root", root.path], wrapper: wrapper)
            #expect(text.status == 1, "\(text.standardError)")
            #expect(text.standardError.contains(locked.path))
        }
    }

    @Test("report lists the container's stores: a table, and under \"account\" in --json")
    func reportStores() async throws {
        try await withTemporaryDirectory { root in
            _ = try await StowageExecutable.run(["prefs", "set", "theme", "dark", "--root", root.path])
            _ = try await StowageExecutable.run([
                "purgeable", "add", "Library/Caches/dl", "--policy", "7d", "--root", root.path,
            ])
            let json = try await StowageExecutable.run(["report", "--root", root.path, "--json"])
            #expect(json.status == 0, "\(json.standardError)")
            let object = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
            let account = try #require(object?["account"] as? [String: Any])
            let stores = try #require(account["stores"] as? [[String: Any]])
            let names = stores.compactMap { $0["name"] as? String }
            #expect(names.contains("preferences/standard") && names.contains("Library/Caches/dl"))
            let preferences = try #require(stores.first { $0["name"] as? String == "preferences/standard" })
            #expect(preferences["category"] as? String == "durable")
            #expect(preferences["entries"] as? Int == 1)

            let table = try await StowageExecutable.run(["report", "--root", root.path])
            #expect(table.standardOutput.contains("preferences/standard"))
            #expect(table.standardOutput.contains("regenerable: 1 stores"))
        }
    }

    @Test("clear-caches empties the caches and temporary locations and keeps preferences; --dry-run keeps all")
    func clearCaches() async throws {
        try await withTemporaryDirectory { root in
            _ = try await StowageExecutable.run(["prefs", "set", "theme", "dark", "--root", root.path])
            let caches = root.appending(path: "Library/Caches/thumbs")
            try FileManager.default.createDirectory(at: caches, withIntermediateDirectories: true)
            try Data(count: 10_000).write(to: caches.appending(path: "a.png"))

            let dry = try await StowageExecutable.run(["clear-caches", "--dry-run", "--root", root.path])
            #expect(dry.status == 0, "\(dry.standardError)")
            #expect(dry.standardOutput.contains("would free"))
            #expect(FileManager.default.fileExists(atPath: caches.appending(path: "a.png").path))

            let outcome = try await StowageExecutable.run(["clear-caches", "--json", "--root", root.path])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let object = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            #expect((object?["bytesFreed"] as? Int ?? 0) >= 10_000)
            #expect(!FileManager.default.fileExists(atPath: caches.path))
            let theme = try await StowageExecutable.run(["prefs", "get", "theme", "--root", root.path])
            #expect(theme.standardOutput.contains("dark"))
        }
    }

    @Test("report prints a table naming every location and the volume")
    func reportTable() async throws {
        try await withTemporaryDirectory { root in
            let file = root.appending(path: "Documents/note.txt")
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(repeating: 7, count: 3_400).write(to: file)
            let outcome = try await StowageExecutable.run(["report", "--root", root.path])
            #expect(outcome.status == 0)
            for name in ["documents", "application support", "caches", "preferences", "temporary", "CACHEDIR.TAG"] {
                #expect(outcome.standardOutput.contains(name), "missing \(name) in \(outcome.standardOutput)")
            }
            #expect(outcome.standardOutput.contains("3.40KB"), "the logical size of the note, as Finder shows it")
            #expect(outcome.standardOutput.contains("Volume of documents: total"))
        }
    }

    // MARK: - usage

    @Test("usage --bytes --json equals du -s -B1")
    func usageMatchesDu() async throws {
        try await withTemporaryDirectory { root in
            for index in 0..<50 {
                try Data(repeating: 1, count: index * 997).write(to: root.appending(path: "f\(index)"))
            }
            symlink("/etc", root.appending(path: "etc-link").path)
            link(root.appending(path: "f10").path, root.appending(path: "f10-again").path)
            let outcome = try await StowageExecutable.run(["usage", "--json", root.path])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let results = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [[String: Any]]
            )
            let totals = try #require(results.first?["totals"] as? [String: Any])
            #expect(totals["allocatedBytes"] as? Int64 == (try await StowageExecutable.du(root.path)))
            #expect(totals["fileCount"] as? Int == 50)

            let plain = try await StowageExecutable.run(["usage", "--bytes", root.path])
            #expect(plain.standardOutput.contains("\(try await StowageExecutable.du(root.path))"))
        }
    }

    @Test("usage --exclude skips matching names and their subtrees, equal to du --exclude -s -B1")
    func usageExcludeMatchesDu() async throws {
        try await withTemporaryDirectory { root in
            let files = [
                ".DS_Store": 6_148, "photos/.DS_Store": 10_244, "photos/a.jpg": 90_000, ".DS_dir/x.bin": 20_000,
                "node_modules/pkg/index.js": 30_000, "logs/app.log": 50_000, "logs/keep.txt": 5_000, "kept/doc": 40_000,
            ]
            for (path, size) in files {
                let url = root.appending(path: path)
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try Data(repeating: 7, count: size).write(to: url)
            }
            link(root.appending(path: "logs/app.log").path, root.appending(path: "kept/app-link").path)
            link(root.appending(path: "kept/doc").path, root.appending(path: "kept/doc.log").path)
            symlink(root.appending(path: "logs").path, root.appending(path: "kept/logs-link").path)
            for patterns in [[".DS*"], ["*.log"], [".DS*", "*.log", "node_modules"]] {
                let excludes = patterns.flatMap { ["--exclude", $0] }
                let outcome = try await StowageExecutable.run(["usage", "--bytes"] + excludes + [root.path])
                #expect(outcome.status == 0, "\(outcome.standardError)")
                let du = try await StowageExecutable.runProcess(
                    ["du", "-s", "-B1"] + patterns.map { "--exclude=\($0)" } + [root.path]
                )
                let expected = try #require(du.standardOutput.split(separator: "\t").first)
                let measured = outcome.standardOutput.split(separator: "\n").last?.split(separator: " ").first
                #expect(measured.map(String.init) == String(expected), "\(patterns)")
            }
        }
    }

    @Test("usage --exclude refuses an empty pattern and one with '/' (exit 64)", arguments: ["", "logs/app.log"])
    func usageExcludeRefused(pattern: String) async throws {
        let outcome = try await StowageExecutable.run(["usage", "--exclude", pattern, "/tmp"])
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("--exclude"))
        #expect(outcome.standardError.contains("exclusion pattern"))
    }

    // MARK: - report: backup audit

    @Test("a file name with newlines cannot forge rows or warnings in the text report: control characters are escaped")
    func reportEscapesControlCharacters() async throws {
        try await withTemporaryDirectory { root in
            _ = try await StowageExecutable.run(["report", "--root", root.path, "--json"])
            let name = "a\n999.00G  documents  Documents∕passwords.kdbx\nwarning: nothing to worry about\u{1B}[2J"
            try Data(repeating: 1, count: 12_000_000).write(to: root.appending(path: "Documents/\(name)"))
            let text = try await StowageExecutable.run(["report", "--root", root.path])
            let lines = text.standardOutput.split(separator: "\n")
            #expect(!lines.contains { $0.hasPrefix("warning: nothing") }, "\(text.standardOutput)")
            #expect(!lines.contains { $0.hasPrefix("999.00G") })
            #expect(!text.standardOutput.contains("\u{1B}"), "no raw escape sequence reaches the terminal")
            #expect(text.standardOutput.contains("a\\n999.00G"), "the name is shown, escaped")
        }
    }

    @Test("report audits backups: large files not excluded are listed, the total warns, text and JSON")
    func reportBackupAudit() async throws {
        try await withTemporaryDirectory { root in
            let first = try await StowageExecutable.run(["report", "--root", root.path, "--json"])
            #expect(first.status == 0, "\(first.standardError)")
            let big = Data(repeating: 1, count: 12_000_000)
            try big.write(to: root.appending(path: "Documents/big.bin"))
            try big.write(to: root.appending(path: "Library/Caches/cached.bin"))
            let podcast = root.appending(path: "Documents/podcast.mp3")
            try big.write(to: podcast)
            try Marks.setExcludedFromBackup(true, at: podcast)

            let text = try await StowageExecutable.run(["report", "--root", root.path, "--backup-warning", "10MB"])
            #expect(text.status == 0, "\(text.standardError)")
            // The audit section runs from its heading to the stores table (which lists cache files).
            let start = try #require(text.standardOutput.range(of: "Backup audit:"))
            let section = text.standardOutput[start.lowerBound...].components(separatedBy: "\nStores\n")[0]
            #expect(section.contains("Backup audit: 12.0"))
            #expect(section.contains("1 file over 10.00M backed up"))
            #expect(section.contains("Documents/big.bin"))
            #expect(!section.contains("podcast.mp3") && !section.contains("cached.bin"))
            #expect(section.contains("warning: a backup of this container would copy 12.0"))

            let json = try await StowageExecutable.run([
                "report", "--root", root.path, "--json", "--backup-warning=10MB",
            ])
            #expect(json.status == 0, "\(json.standardError)")
            let object = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
            let audit = try #require(object?["backupAudit"] as? [String: Any])
            let files = try #require(audit["largeFiles"] as? [[String: Any]])
            #expect(files.compactMap { $0["path"] as? String } == ["Documents/big.bin"])
            #expect(audit["isOverWarningThreshold"] as? Bool == true)
            #expect(audit["warning"] is String)
            let locations = try #require(audit["locations"] as? [[String: Any]])
            let documents = try #require(locations.first { $0["location"] as? String == "documents" })
            let excluded = try #require(documents["excluded"] as? [String: Any])
            #expect((excluded["allocatedBytes"] as? Int64 ?? 0) >= 12_000_000)
            #expect(excluded["fileCount"] as? Int == 1)
            let caches = try #require(locations.first { $0["location"] as? String == "caches" })
            #expect(caches["isExcluded"] as? Bool == true)
            #expect((audit["excludedBytes"] as? Int64 ?? 0) >= 24_000_000)
            let backedUp = try #require(audit["backedUpBytes"] as? Int64)
            #expect(backedUp >= 12_000_000 && backedUp < 12_100_000)

            let quiet = try await StowageExecutable.run(["report", "--root", root.path])
            #expect(!quiet.standardOutput.contains("warning:"))  // 12 MB is under the default 100 MB
        }
    }

    @Test(
        "report refuses bad audit thresholds with a usage error (exit 64)",
        arguments: [
            ["--large-file-threshold=-5MB"], ["--backup-warning", "lots"], ["--large-file-threshold", "12 parsecs"],
        ]
    )
    func reportBadThresholds(arguments: [String]) async throws {
        let outcome = try await StowageExecutable.run(["report", "--root", "/tmp/stowage-never-created"] + arguments)
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("as a size"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/stowage-never-created"))
    }

    @Test("usage of a missing path exits 2 and names the path")
    func usageMissingPath() async throws {
        let outcome = try await StowageExecutable.run(["usage", "/nonexistent/stowage-test"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("/nonexistent/stowage-test"))
        #expect(outcome.standardError.contains("ENOENT"))
    }

    @Test("usage reports unreadable directories like du, exits 1, and counts what it can")
    func usageUnreadableDirectory() async throws {
        // Root reads everything, so drop to 'nobody' for both du and stowage with setpriv.
        let wrapper = geteuid() == 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        try await withTemporaryDirectory { root in
            chmod(root.path, 0o755)
            let locked = root.appending(path: "locked")
            try FileManager.default.createDirectory(
                at: locked.appending(path: "inner"),
                withIntermediateDirectories: true
            )
            try Data(repeating: 1, count: 50_000).write(to: locked.appending(path: "inner/big"))
            try Data(repeating: 1, count: 5_000).write(to: root.appending(path: "visible"))
            chmod(root.appending(path: "visible").path, 0o644)
            chmod(locked.path, 0o000)
            defer { chmod(locked.path, 0o755) }

            let outcome = try await StowageExecutable.run(["usage", "--bytes", "--json", root.path], wrapper: wrapper)
            #expect(outcome.status == 1, "\(outcome.standardError)")
            #expect(outcome.standardError.contains(locked.path))
            #expect(outcome.standardError.contains("EACCES"))
            let results = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [[String: Any]]
            )
            let totals = try #require(results.first?["totals"] as? [String: Any])
            #expect(totals["allocatedBytes"] as? Int64 == (try await StowageExecutable.du(root.path, wrapper: wrapper)))
        }
    }

    @Test("usage holds one descriptor per level of depth, and reports EMFILE where they run out")
    func usageDescriptorsPerLevel() async throws {
        // 64 descriptors: the runtime takes under ten, so 45 levels fit at one per level, not at
        // two (a directory's descriptor and its listing's, which a walk that recursed held).
        let wrapper = ["prlimit", "--nofile=64:64"]
        try await withTemporaryDirectory { root in
            let shallow = root.appending(path: "shallow")
            let deep = root.appending(path: "deep")
            try FileManager.default.createDirectory(
                at: shallow.appending(path: Array(repeating: "d", count: 45).joined(separator: "/")),
                withIntermediateDirectories: true
            )
            try FileManager.default.createDirectory(
                at: deep.appending(path: Array(repeating: "d", count: 300).joined(separator: "/")),
                withIntermediateDirectories: true
            )
            let fits = try await StowageExecutable.run(["usage", "--bytes", "--json", shallow.path], wrapper: wrapper)
            #expect(fits.status == 0, "\(fits.standardError)")
            let results = try #require(
                try JSONSerialization.jsonObject(with: Data(fits.standardOutput.utf8)) as? [[String: Any]]
            )
            let totals = try #require(results.first?["totals"] as? [String: Any])
            #expect(totals["directoryCount"] as? Int == 46)
            #expect(totals["allocatedBytes"] as? Int64 == (try await StowageExecutable.du(shallow.path)))

            let tooDeep = try await StowageExecutable.run(["usage", "--bytes", deep.path], wrapper: wrapper)
            #expect(tooDeep.status == 1, "\(tooDeep.standardError)")
            #expect(tooDeep.standardError.contains("EMFILE"))
            #expect(tooDeep.standardOutput.contains(deep.path))
        }
    }

    // MARK: - clear

    @Test("clear removes contents, keeps the directory, and never follows a link outside")
    func clearKeepsOutsideTarget() async throws {
        try await withTemporaryDirectory { root in
            let outside = root.appending(path: "outside")
            let victim = root.appending(path: "victim")
            try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                at: victim.appending(path: "sub"),
                withIntermediateDirectories: true
            )
            try Data(repeating: 1, count: 10_000).write(to: outside.appending(path: "precious"))
            try Data(repeating: 1, count: 10_000).write(to: victim.appending(path: "sub/cache"))
            symlink(outside.path, victim.appending(path: "link-to-outside").path)

            let outcome = try await StowageExecutable.run(["clear", victim.path])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(outcome.standardOutput.contains("removed 3 entries"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: victim.path).isEmpty)
            #expect(FileManager.default.fileExists(atPath: outside.appending(path: "precious").path))
        }
    }

    @Test("clear refuses / and the home directory with a usage error", arguments: ["/", "/root/..", NSHomeDirectory()])
    func clearRefusesDangerousPaths(path: String) async throws {
        let outcome = try await StowageExecutable.run(["clear", path])
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("refusing to clear"))
    }

    @Test("clear --location caches keeps CACHEDIR.TAG")
    func clearLocation() async throws {
        try await withTemporaryDirectory { root in
            _ = try await StowageExecutable.run(["report", "--root", root.path])
            try Data(repeating: 1, count: 100).write(to: root.appending(path: "Library/Caches/entry"))
            let outcome = try await StowageExecutable.run([
                "clear", "--location", "caches", "--root", root.path, "--json",
            ])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let contents = try FileManager.default.contentsOfDirectory(
                atPath: root.appending(path: "Library/Caches").path
            )
            #expect(contents == ["CACHEDIR.TAG"])
        }
    }

    // MARK: - locations, capacity, arguments

    @Test("locations follows XDG variables passed in the environment")
    func locationsXDG() async throws {
        let environment = [
            "HOME": "/home/reader", "XDG_CACHE_HOME": "/var/cache/reader", "XDG_DATA_HOME": "relative/ignored",
            "TMPDIR": "/scratch", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
        let outcome = try await StowageExecutable.run(
            ["locations", "--app", "com.example.reader", "--json"],
            environment: environment
        )
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [[String: Any]]
        )
        let paths = Dictionary(uniqueKeysWithValues: entries.map { ($0["location"] as! String, $0["path"] as! String) })
        #expect(paths["caches"] == "/var/cache/reader/com.example.reader")
        #expect(paths["documents"] == "/home/reader/.local/share/com.example.reader/documents")
        #expect(paths["preferences"] == "/home/reader/.config/com.example.reader")
        #expect(paths["temporary"] == "/scratch/com.example.reader-\(getuid())")
    }

    @Test("capacity --json reports the volume's statvfs figures")
    func capacityJSON() async throws {
        try await withTemporaryDirectory { root in
            let outcome = try await StowageExecutable.run([
                "capacity", "--json", "--important-reserve", "1MB", root.path,
            ])
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            )
            let figure = { (key: String) in (object[key] as? NSNumber)?.int64Value }
            let available = try #require(figure("available"))
            #expect(try #require(figure("total")) >= available)
            #expect(figure("availableForImportantUsage") == max(0, available - 1_000_000))
        }
    }

    @Test(
        "bad arguments exit 64 with a message that says what to do",
        arguments: [
            (["locations", "--app", "../escape"], "not a valid container identifier"),
            (["capacity", "--important-reserve", "lots"], "cannot read 'lots' as a size"),
            (["clear"], "give either a PATH or --location"),
        ]
    )
    func badArguments(arguments: [String], message: String) async throws {
        let outcome = try await StowageExecutable.run(arguments)
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
    }
}
