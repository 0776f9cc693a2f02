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

    @Test("a huge path is not echoed whole to standard error")
    func hugePathCut() async throws {
        let huge = "/nonexistent/" + String(repeating: "x", count: 120_000)
        let outcome = try await StowageExecutable.run(["usage", huge])
        #expect(outcome.status != 0)
        #expect(outcome.standardError.utf8.count < 4_000, "\(outcome.standardError.utf8.count) bytes")
    }
}
