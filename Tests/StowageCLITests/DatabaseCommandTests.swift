import Foundation
import StowageTestSupport
import Testing

@Suite("stowage db end to end")
struct DatabaseCommandTests {
    @Test("users lists a database made by another program; backup copies it; remove deletes it all")
    func usersBackupRemove() async throws {
        try await withTemporaryDirectory { root in
            let directory = root.appending(path: "Library/Application Support/databases/ada")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let database = directory.appending(path: "main.sqlite").path
            let python = try await StowageExecutable.runProcess([
                "/usr/bin/env", "python3", "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); "
                    + "c.execute('CREATE TABLE note(text)'); c.execute(\"INSERT INTO note VALUES ('hi')\"); c.commit()",
                database,
            ])
            #expect(python.status == 0, "\(python.standardError)")
            let base = ["--root", root.path]
            #expect(try await StowageExecutable.run(["db", "users"] + base).standardOutput == "ada\n")

            let copy = root.appending(path: "ada.sqlite").path
            let backup = try await StowageExecutable.run(["db", "backup", "ada", copy] + base)
            #expect(backup.status == 0, "\(backup.standardError)")
            let check = try await StowageExecutable.runProcess([
                "/usr/bin/env", "python3", "-c",
                "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT text FROM note').fetchone()[0])",
                copy,
            ])
            #expect(check.standardOutput == "hi\n")
            #expect(try await StowageExecutable.run(["db", "backup", "ada", copy] + base).status == 2)

            #expect(try await StowageExecutable.run(["db", "remove", "ada"] + base).standardOutput == "removed ada\n")
            #expect(!FileManager.default.fileExists(atPath: directory.path))
            #expect(try await StowageExecutable.run(["db", "users"] + base).standardOutput == "")
            #expect(try await StowageExecutable.run(["db", "remove", "../x"] + base).status == 2)
        }
    }
}
