import Foundation
import StowageCore
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

    // MARK: - NaN and infinities

    @Test("prefs import of a file holding NaN exits 2 naming the key, and applies nothing from the file")
    func importNaNRefused() async throws {
        try await withTemporaryDirectory { root in
            let base = ["--root", root.path]
            let file = root.appending(path: "nan.plist")
            try PropertyListSerialization.data(
                fromPropertyList: ["aFirst": "x", "ratio": Double.nan],
                format: .binary,
                options: 0
            ).write(to: file)
            let imported = try await StowageExecutable.run(["prefs", "import", file.path] + base)
            #expect(imported.status == 2, "\(imported.standardOutput)")
            #expect(imported.standardError.contains("\"ratio\" is nan"), "\(imported.standardError)")
            #expect(imported.standardError.contains("nothing was imported"), "\(imported.standardError)")
            let list = try await StowageExecutable.run(["prefs", "list", "--json"] + base)
            #expect(list.status == 0, "\(list.standardError)")
            let object = try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [String: Any]
            #expect(object?.isEmpty == true, "all or nothing: \(list.standardOutput)")
        }
    }

    @Test("prefs set refuses NaN and infinities as doubles (exit 64)", arguments: ["nan", "inf", "+infinity"])
    func setNonFiniteRefused(value: String) async throws {
        try await withTemporaryDirectory { root in
            let outcome = try await StowageExecutable.run(
                ["prefs", "set", "ratio", value, "--type", "double", "--root", root.path]
            )
            #expect(outcome.status == 64)
            #expect(outcome.standardError.contains("a finite number"), "\(outcome.standardError)")
        }
    }

    @Test("prefs list --json and get --json on a NaN stored by an older version: exit 2 and a message, no crash")
    func listJSONWithStoredNaN() async throws {
        try await withTemporaryDirectory { root in
            let base = ["--root", root.path]
            let set = try await StowageExecutable.run(["prefs", "set", "ratio", "0.5", "--type", "double"] + base)
            try #require(set.status == 0, "\(set.standardError)")
            try Self.storeNaNInPlaceOfOneHalf(root.appending(path: "Library/Preferences/standard.stowprefs"))
            let get = try await StowageExecutable.run(["prefs", "get", "ratio"] + base)
            try #require(
                get.standardOutput == "nan\n",
                "the suite holds NaN: \(get.standardOutput) \(get.standardError)"
            )

            for arguments in [["prefs", "list", "--json"], ["prefs", "get", "ratio", "--json"]] {
                let outcome = try await StowageExecutable.run(arguments + base)
                #expect(outcome.status == 2, "\(arguments): \(outcome.standardError)")
                #expect(outcome.standardOutput.isEmpty)
                #expect(
                    outcome.standardError.contains("cannot write the preferences as JSON")
                        && outcome.standardError.contains("prefs remove ratio"),
                    "\(arguments): \(outcome.standardError)"
                )
            }
            let plain = try await StowageExecutable.run(["prefs", "list"] + base)
            #expect(plain.status == 0 && plain.standardOutput.contains("ratio  double  nan"), "\(plain.standardOutput)")
        }
    }

    /// Rewrites the suite's one record, `ratio = 0.5`, to hold NaN with a valid checksum: a
    /// suite as a version that stored NaN left it. The record is `length, CRC-32C, payload`
    /// right after the 4 KiB header, with the double's bits little-endian at the payload's end.
    private static func storeNaNInPlaceOfOneHalf(_ file: URL) throws {
        var bytes = [UInt8](try Data(contentsOf: file))
        let header = 4096
        let oneHalf = withUnsafeBytes(of: (0.5).bitPattern.littleEndian) { Array($0) }
        let nan = withUnsafeBytes(of: Double.nan.bitPattern.littleEndian) { Array($0) }
        let length = Int(bytes[header]) | Int(bytes[header + 1]) << 8 | Int(bytes[header + 2]) << 16
        let payload = (header + 8)..<(header + 8 + length)
        guard bytes.count >= payload.upperBound, Array(bytes[(payload.upperBound - 8)..<payload.upperBound]) == oneHalf
        else { throw TestFailure("the suite's first record is not ratio = 0.5") }
        bytes.replaceSubrange((payload.upperBound - 8)..<payload.upperBound, with: nan)
        let checksum = CRC32C.checksum(Array(bytes[payload]))
        withUnsafeBytes(of: checksum.littleEndian) { bytes.replaceSubrange((header + 4)..<(header + 8), with: $0) }
        try Data(bytes).write(to: file)
    }
}
