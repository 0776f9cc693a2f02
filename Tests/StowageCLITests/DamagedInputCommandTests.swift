import Foundation
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Damaged files and odd inputs, as a shell user meets them.
@Suite("damaged and odd inputs on the command line")
struct DamagedInputCommandTests {
    @Test("prefs list on a suite with a damaged record lists what survived, says so on stderr and exits 1")
    func damagedSuite() async throws {
        try await withTemporaryDirectory { root in
            let base = ["--root", root.path]
            for index in 0..<50 {
                #expect(
                    try await StowageExecutable.run(["prefs", "set", "key\(index)", "value \(index)"] + base).status
                        == 0
                )
            }
            let file = root.appending(path: "Library/Preferences/standard.stowprefs")
            var bytes = try [UInt8](Data(contentsOf: file))
            bytes[4096 + (bytes.count - 4096) / 2] ^= 0x20
            try Data(bytes).write(to: file)

            let list = try await StowageExecutable.run(["prefs", "list", "--json"] + base)
            #expect(list.status == 1, "\(list.standardError)")
            #expect(list.standardError.contains("damaged"), "\(list.standardError)")
            let object = try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [String: Any]
            #expect(object?.count == 49)
            // Repaired: the next run is clean.
            #expect(try await StowageExecutable.run(["prefs", "list"] + base).status == 0)
        }
    }

    @Test("prefs import of a FIFO, a directory or a device names what it is, promptly")
    func importNotAFile() async throws {
        try await withTemporaryDirectory { root in
            let fifo = root.appending(path: "fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            for (path, expected) in [(fifo, "FIFO"), (root.path, "directory"), ("/dev/null", "character device")] {
                let outcome = try await StowageExecutable.run(
                    ["prefs", "import", path, "--root", root.path],
                    wrapper: ["timeout", "30"]
                )
                #expect(outcome.status == 2, "\(path): \(outcome.status)")
                #expect(outcome.standardError.contains(expected), "\(outcome.standardError)")
                #expect(!outcome.standardError.contains("NSCocoaErrorDomain"))
            }
        }
    }

    @Test("prefs set NAME nan --type double is refused: NaN and infinities have no JSON or plist form")
    func notFinite() async throws {
        try await withTemporaryDirectory { root in
            for text in ["nan", "inf", "infinity"] {
                let outcome = try await StowageExecutable.run([
                    "prefs", "set", "x", text, "--type", "double", "--root", root.path,
                ])
                #expect(outcome.status == 64)
                #expect(outcome.standardError.contains("finite"), "\(outcome.standardError)")
            }
        }
    }

    @Test("db users --root FILE says what is wrong instead of printing an NSError")
    func databaseRootIsAFile() async throws {
        try await withTemporaryDirectory { scratch in
            let file = scratch.appending(path: "file")
            try Data("x".utf8).write(to: file)
            let outcome = try await StowageExecutable.run(["db", "users", "--root", file.path])
            #expect(outcome.status == 2)
            #expect(outcome.standardError.contains("not a directory") || outcome.standardError.contains("ENOTDIR"))
            #expect(!outcome.standardError.contains("NSCocoaErrorDomain"))
        }
    }
}
