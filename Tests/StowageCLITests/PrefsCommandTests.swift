import Foundation
import StowageTestSupport
import Testing

@Suite("stowage prefs end to end")
struct PrefsCommandTests {
    @Test("set, get, list --json, remove, and a missing name exits 2")
    func editAndRead() async throws {
        try await withTemporaryDirectory { root in
            let base = ["--root", root.path]
            #expect(
                try await StowageExecutable.run(["prefs", "set", "launchCount", "3", "--type", "int"] + base).status
                    == 0
            )
            #expect(try await StowageExecutable.run(["prefs", "set", "name", "Ada L"] + base).status == 0)
            let get = try await StowageExecutable.run(["prefs", "get", "launchCount"] + base)
            #expect(get.standardOutput == "3\n")
            let list = try await StowageExecutable.run(["prefs", "list", "--json"] + base)
            let object = try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [String: Any]
            #expect(object?["launchCount"] as? Int == 3)
            #expect(object?["name"] as? String == "Ada L")
            #expect(try await StowageExecutable.run(["prefs", "remove", "name"] + base).status == 0)
            let missing = try await StowageExecutable.run(["prefs", "get", "name"] + base)
            #expect(missing.status == 2)
            #expect(missing.standardError.contains("no preference \"name\""))
            // The suite lives in the container's preferences location.
            #expect(FileManager.default.fileExists(atPath: root.path + "/Library/Preferences/standard.stowprefs"))
        }
    }

    @Test("a value that does not parse as its --type is a usage error and writes nothing")
    func badValue() async throws {
        try await withTemporaryDirectory { root in
            let outcome = try await StowageExecutable.run([
                "prefs", "set", "n", "abc", "--type", "int", "--root", root.path,
            ])
            #expect(outcome.status == 64)
            #expect(outcome.standardError.contains("\"abc\" is not a valid int"))
            #expect(!FileManager.default.fileExists(atPath: root.path + "/Library/Preferences/standard.stowprefs"))
        }
    }

    @Test("export then import into another suite gives the same values")
    func exportImport() async throws {
        try await withTemporaryDirectory { root in
            let base = ["--root", root.path]
            _ = try await StowageExecutable.run(["prefs", "set", "ratio", "0.5", "--type", "double"] + base)
            _ = try await StowageExecutable.run(["prefs", "set", "on", "true", "--type", "bool"] + base)
            let file = root.appending(path: "out.plist").path
            #expect(try await StowageExecutable.run(["prefs", "export", file, "--binary"] + base).status == 0)
            let imported = try await StowageExecutable.run(["prefs", "import", file, "--suite", "copy"] + base)
            #expect(imported.standardOutput == "imported 2 values\n")
            let list = try await StowageExecutable.run(["prefs", "list", "--suite", "copy"] + base)
            #expect(list.standardOutput.contains("ratio  double  0.5"))
            #expect(list.standardOutput.contains("on     bool    true"))
        }
    }
}
