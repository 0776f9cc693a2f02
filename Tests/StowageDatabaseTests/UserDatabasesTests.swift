import Foundation
import GRDB
import StowageCore
import StowageDatabase
import StowageTestSupport
import Synchronization
import Testing

/// A record as an app would write one: the documented example.
private struct Note: Codable, Equatable, FetchableRecord, PersistableRecord {
    var id: Int64?
    var text: String
}

private func migrator(upTo version: Int = 1) -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1 notes") { db in
        try db.create(table: "note") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("text", .text).notNull()
        }
    }
    if version >= 2 {
        migrator.registerMigration("v2 pinned") { db in
            try db.alter(table: "note") { table in table.add(column: "pinned", .boolean).notNull().defaults(to: false) }
        }
    }
    return migrator
}

/// A container in a fresh temporary directory, removed with the value.
private final class Scratch: Sendable {
    let directory: TemporaryDirectory
    let container: Container
    var url: URL { directory.url }
    init(_ name: String = #function) throws {
        directory = try TemporaryDirectory(name)
        container = Container(root: directory.url, identifier: "org.stowage.tests")
    }
}

@Suite("UserDatabases")
struct UserDatabasesTests {
    @Test("each user gets their own migrated WAL database; records round-trip")
    func perUser() async throws {
        let scratch = try Scratch()
        let databases = UserDatabases(container: scratch.container, migrator: migrator())
        let ada = try await databases.database(for: "ada")
        let bob = try await databases.database(for: "bob@example.com")
        try await ada.write { db in try Note(id: nil, text: "from ada").insert(db) }
        #expect(try await ada.read { db in try Note.fetchAll(db).map(\.text) } == ["from ada"])
        #expect(try await bob.read { db in try Note.fetchCount(db) } == 0)
        #expect(try await ada.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
        #expect(try databases.users() == ["ada", "bob@example.com"])
        #expect(
            try databases.databaseURL("ada").path.hasSuffix("/Library/Application Support/databases/ada/main.sqlite")
        )
        #expect(try await databases.database(for: "ada") === ada)
    }

    @Test("a new app version's migration runs on the user's existing database")
    func laterMigration() async throws {
        let scratch = try Scratch()
        do {
            let first = UserDatabases(container: scratch.container, migrator: migrator(upTo: 1))
            try await first.database(for: "ada").write { db in try Note(id: nil, text: "old").insert(db) }
            #expect(try await first.removeUser("nobody").removed == false)
        }
        let second = UserDatabases(container: scratch.container, migrator: migrator(upTo: 2))
        let pool = try await second.database(for: "ada")
        let (text, pinned) = try await pool.read { db -> (String?, Bool?) in
            let row = try Row.fetchOne(db, sql: "SELECT text, pinned FROM note")
            return (row?["text"], row?["pinned"])
        }
        #expect(text == "old")
        #expect(pinned == false)
    }

    @Test("ValueObservation reports each committed change")
    func observation() async throws {
        let scratch = try Scratch()
        let databases = UserDatabases(container: scratch.container, migrator: migrator())
        let pool = try await databases.database(for: "ada")
        let observation = ValueObservation.tracking { db in try Note.fetchCount(db) }
        var counts = observation.values(in: pool).makeAsyncIterator()
        // The first value is the count when the observation started; each committed write then
        // brings a fresh value (GRDB may coalesce, so wait for the one each write must produce).
        #expect(try await counts.next() != nil)
        for expected in 1...2 {
            try await pool.write { db in try Note(id: nil, text: "note \(expected)").insert(db) }
            var value = try await counts.next()
            while let current = value, current < expected { value = try await counts.next() }
            #expect(value == expected)
        }
    }

    @Test("a backup is a consistent single-file copy; an existing destination is refused")
    func backup() async throws {
        let scratch = try Scratch()
        let databases = UserDatabases(container: scratch.container, migrator: migrator())
        let pool = try await databases.database(for: "ada")
        try await pool.write { db in
            for index in 0..<100 { try Note(id: nil, text: "note \(index)").insert(db) }
        }
        let destination = scratch.url.appending(path: "ada-backup.sqlite")
        try await databases.backup(user: "ada", to: destination)
        let copy = try DatabaseQueue(path: destination.path)
        #expect(try await copy.read { db in try Note.fetchCount(db) } == 100)
        try copy.close()
        await #expect {
            try await databases.backup(user: "ada", to: destination)
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        await #expect {
            try await databases.backup(user: "nobody", to: scratch.url.appending(path: "x.sqlite"))
        } throws: { ($0 as? StowageError)?.code == .notFound }
    }

    @Test("removing a user closes their pool and leaves none of their files")
    func removal() async throws {
        let scratch = try Scratch()
        let databases = UserDatabases(container: scratch.container, migrator: migrator())
        let pool = try await databases.database(for: "ada")
        try await pool.write { db in try Note(id: nil, text: "secret").insert(db) }
        let directory = try databases.userDirectory("ada")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/main.sqlite-wal"))
        #expect(try await databases.removeUser("ada").removed)
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(try databases.users().isEmpty)
        #expect(try await !databases.removeUser("ada").removed)
        // Using the user again starts from an empty, migrated database.
        let fresh = try await databases.database(for: "ada")
        #expect(try await fresh.read { db in try Note.fetchCount(db) } == 0)
    }

    @Test(
        "user ids that could leave the databases directory are refused",
        arguments: ["", "..", "../x", "a/b", ".hidden"]
    )
    func badUserIDs(user: String) async throws {
        let scratch = try Scratch()
        let databases = UserDatabases(container: scratch.container, migrator: migrator())
        await #expect {
            try await databases.database(for: user)
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        #expect(throws: StowageError.self) { try databases.removeUser(user) }
    }

    @Test(
        "a user's directory that is a symbolic link is removed as a link, and a link left by a removal blocks no other"
    )
    func linkedUserDirectory() async throws {
        let scratch = try Scratch()
        let databases = UserDatabases(container: scratch.container, migrator: migrator())
        _ = try await databases.database(for: "bob")
        // ada's directory is a link to a directory elsewhere, and an interrupted removal left a
        // `.removing-` name that is a link too: neither is followed, both go as links.
        let elsewhere = scratch.url.appending(path: "elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: elsewhere.appending(path: "keep.txt"))
        let ada = try databases.userDirectory("ada")
        try FileManager.default.createSymbolicLink(atPath: ada.path, withDestinationPath: elsewhere.path)
        let leftover = ada.deletingLastPathComponent().appending(path: ".removing-carol-1").path
        try FileManager.default.createSymbolicLink(atPath: leftover, withDestinationPath: elsewhere.path)
        #expect(try await databases.removeUser("bob").removed, "a link left by a removal does not fail others")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: leftover)) == nil, "the link went")
        #expect(try await databases.removeUser("ada").removed)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: ada.path)) == nil)
        #expect(FileManager.default.fileExists(atPath: elsewhere.appending(path: "keep.txt").path))
    }
}
