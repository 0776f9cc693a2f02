import Foundation
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Paths with NUL or control bytes, `..` and links, as a shell user meets them.
@Suite("paths on the command line")
struct PathSafetyCommandTests {
    @Test("clean --manifest with 'Documents/..\\u0000/..\\u0000' (the reported reproduction) empties nothing")
    func nulManifestReproduction() async throws {
        try await withTemporaryDirectory { outer in
            let root = outer.appending(path: "R")
            for directory in ["Documents", "Library/Caches"] {
                try FileManager.default.createDirectory(
                    at: root.appending(path: directory),
                    withIntermediateDirectories: true
                )
            }
            try Data("precious".utf8).write(to: outer.appending(path: "precious"))
            let manifest = outer.appending(path: "m.json")
            try Data(#"[{"Path":"Documents/..\u0000/..\u0000"}]"#.utf8).write(to: manifest)
            let outcome = try await StowageExecutable.run(["clean", "--root", root.path, "--manifest", manifest.path])
            #expect(outcome.status == 1, "a failed task is exit 1: \(outcome.standardError)")
            #expect(outcome.standardError.contains("NUL"), "\(outcome.standardError)")
            #expect(FileManager.default.fileExists(atPath: outer.appending(path: "precious").path))
            #expect(FileManager.default.fileExists(atPath: root.appending(path: "Documents").path))
        }
    }

    @Test("clear LINK/. is refused and the link's target keeps its contents", arguments: ["/.", "/./", "//."])
    func clearThroughLink(suffix: String) async throws {
        try await withTemporaryDirectory { scratch in
            let target = scratch.appending(path: "target")
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            try Data("x".utf8).write(to: target.appending(path: "survivor"))
            try FileManager.default.createSymbolicLink(
                atPath: scratch.appending(path: "link").path,
                withDestinationPath: target.path
            )
            let outcome = try await StowageExecutable.run(["clear", scratch.appending(path: "link").path + suffix])
            #expect(outcome.status != 0)
            #expect(outcome.standardError.contains("symbolic link"), "\(outcome.standardError)")
            #expect(FileManager.default.fileExists(atPath: target.appending(path: "survivor").path))
        }
    }

    @Test("a directory, a FIFO or an empty path as --manifest gets a clear message, promptly")
    func manifestNotAFile() async throws {
        try await withTemporaryDirectory { scratch in
            let fifo = scratch.appending(path: "fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            for (path, expected) in [(scratch.path, "is a directory"), (fifo, "is a FIFO"), ("", "path is empty")] {
                // `timeout`: reading a FIFO used to block forever.
                let outcome = try await StowageExecutable.run(
                    ["clean", "--root", scratch.path, "--manifest", path],
                    wrapper: ["timeout", "30"]
                )
                #expect(outcome.status != 0 && outcome.status != 124, "\(path): \(outcome.status)")
                #expect(outcome.standardError.contains(expected), "\(path): \(outcome.standardError)")
                #expect(!outcome.standardError.contains("NSCocoaErrorDomain"))
            }
        }
    }

    @Test("usage \"\" is refused instead of measuring the working directory")
    func usageEmptyPath() async throws {
        let outcome = try await StowageExecutable.run(["usage", ""])
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("path is empty"), "\(outcome.standardError)")
    }

    @Test("purgeable add --cap -1MB names the bad size instead of a missing value")
    func negativeCap() async throws {
        try await withTemporaryDirectory { root in
            let outcome = try await StowageExecutable.run(
                ["purgeable", "add", "Library/Caches/x", "--policy", "7d", "--cap", "-1MB", "--root", root.path]
            )
            #expect(outcome.status == 64)
            #expect(outcome.standardError.contains("'-1MB'"), "\(outcome.standardError)")
            #expect(!outcome.standardError.contains("Missing value"))
        }
    }

    @Test("purgeable add --policy 7 (no unit) is refused naming the units, exit 64, nothing registered")
    func policyWithoutUnit() async throws {
        try await withTemporaryDirectory { root in
            let outcome = try await StowageExecutable.run(
                ["purgeable", "add", "Library/Caches/x", "--policy", "7", "--root", root.path]
            )
            #expect(outcome.status == 64)
            #expect(
                outcome.standardError.contains("has no unit") && outcome.standardError.contains("'7d'")
                    && outcome.standardError.contains("'manual'"),
                "\(outcome.standardError)"
            )
            let list = try await StowageExecutable.run(["purgeable", "list", "--root", root.path])
            #expect(list.standardOutput.contains("No purgeable directories are registered."), "\(list.standardOutput)")
        }
    }

    @Test(
        "purgeable list shows what a purge fails on (a file, a link out of the container, an unreadable directory) as an error, not missing, and exits 1"
    )
    func purgeableListOfBrokenRegistrations() async throws {
        // Root opens every directory, so drop to 'nobody' with setpriv and give it the container.
        let asNobody = geteuid() == 0
        let wrapper = asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        try await withTemporaryDirectory { outer in
            let root = outer.appending(path: "R")
            for name in ["file", "escape", "locked", "gone", "fine"] {
                let add = try await StowageExecutable.run([
                    "purgeable", "add", "Library/Caches/\(name)", "--policy", "manual", "--root", root.path,
                ])
                try #require(add.status == 0, "\(add.standardError)")
            }
            let caches = root.appending(path: "Library/Caches")
            try FileManager.default.removeItem(at: caches.appending(path: "file"))
            try Data("x".utf8).write(to: caches.appending(path: "file"))
            try FileManager.default.removeItem(at: caches.appending(path: "escape"))
            try FileManager.default.createDirectory(
                at: outer.appending(path: "elsewhere"),
                withIntermediateDirectories: true
            )
            try FileManager.default.createSymbolicLink(
                atPath: caches.appending(path: "escape").path,
                withDestinationPath: outer.appending(path: "elsewhere").path
            )
            try FileManager.default.removeItem(at: caches.appending(path: "gone"))
            if asNobody {
                chmod(outer.path, 0o755)
                _ = try await StowageExecutable.runProcess(["chown", "-R", "65534:65534", root.path])
            }
            let locked = caches.appending(path: "locked")
            chmod(locked.path, 0o000)
            defer { chmod(locked.path, 0o755) }

            let json = try await StowageExecutable.run(
                ["purgeable", "list", "--root", root.path, "--json"],
                wrapper: wrapper
            )
            #expect(json.status == 1, "\(json.standardError)")
            let rows = try #require(
                try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]],
                "\(json.standardOutput)"
            )
            func row(_ name: String) -> [String: Any] {
                rows.first { $0["path"] as? String == "Library/Caches/\(name)" } ?? [:]
            }
            #expect((row("file")["error"] as? String)?.contains("is not a directory") == true, "\(rows)")
            #expect((row("escape")["error"] as? String)?.contains("outside the container") == true, "\(rows)")
            #expect((row("locked")["error"] as? String)?.contains("EACCES") == true, "\(rows)")
            #expect(row("gone")["error"] == nil && row("gone")["allocatedBytes"] == nil, "\(rows)")
            #expect(row("fine")["error"] == nil && row("fine")["allocatedBytes"] != nil, "\(rows)")
            #expect(json.standardError.contains("is not a directory"), "\(json.standardError)")

            let text = try await StowageExecutable.run(["purgeable", "list", "--root", root.path], wrapper: wrapper)
            #expect(text.status == 1, "\(text.standardError)")
            let sizes = Dictionary(
                text.standardOutput.split(separator: "\n").dropFirst().map { line in
                    let cells = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                    return (cells[0], cells[3])
                },
                uniquingKeysWith: { first, _ in first }
            )
            #expect(sizes["Library/Caches/file"] == "error", "\(text.standardOutput)")
            #expect(sizes["Library/Caches/escape"] == "error", "\(text.standardOutput)")
            #expect(sizes["Library/Caches/locked"] == "error", "\(text.standardOutput)")
            #expect(sizes["Library/Caches/gone"] == "missing", "\(text.standardOutput)")

            // The purge fails on the same three, in the same words.
            let purge = try await StowageExecutable.run(["purge", "--root", root.path], wrapper: wrapper)
            #expect(purge.status == 1, "\(purge.standardError)")
            for name in ["file", "escape", "locked"] {
                let message = try #require(row(name)["error"] as? String)
                #expect(purge.standardError.contains(message), "\(name): \(purge.standardError)")
            }
        }
    }

    @Test("a huge path is not echoed whole to standard error")
    func hugePathCut() async throws {
        let huge = "/nonexistent/" + String(repeating: "x", count: 120_000)
        let outcome = try await StowageExecutable.run(["usage", huge])
        #expect(outcome.status != 0)
        #expect(outcome.standardError.utf8.count < 4_000, "\(outcome.standardError.utf8.count) bytes")
    }
}
