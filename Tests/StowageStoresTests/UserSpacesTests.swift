import Crypto
import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageDatabase
import StowagePreferences
import StowageSecrets
import StowageStores
import Testing

/// Fills `user`'s space in every store.
func populate(_ space: UserSpace, files: Int = 20) async throws {
    let cache = try space.diskCache("images")
    for index in 0..<files {
        try await cache.setData(Data(repeating: UInt8(index % 250), count: 20_000), forKey: "i\(index)")
    }
    let preferences = try space.preferences()
    try preferences.set(space.user, for: PreferenceKey<String>("name", default: ""))
    try space.secrets().set("token of \(space.user)", service: "api", account: space.user)
    try FileManager.default.createDirectory(
        at: space.dataDirectory.appending(path: "notes"),
        withIntermediateDirectories: true
    )
    try Data("notes of \(space.user)".utf8).write(to: space.dataDirectory.appending(path: "notes/1.txt"))
    try FileManager.default.createDirectory(at: space.temporaryDirectory, withIntermediateDirectories: true)
    try Data(count: 3_000).write(to: space.temporaryDirectory.appending(path: "upload"))
    let pool = try await space.database()
    try await pool.write { db in try db.execute(sql: "INSERT INTO note (text) VALUES (?)", arguments: [space.user]) }
}

func noteMigrator() -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1") { db in
        try db.create(table: "note") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("text", .text).notNull()
        }
    }
    return migrator
}

@Suite("UserSpaces")
struct UserSpacesTests {
    @Test("wiping one user removes all of theirs from every store and leaves the other byte for byte")
    func wipeOneUser() async throws {
        let fixture = try PopulatedContainer()
        let databases = UserDatabases(container: fixture.container, migrator: noteMigrator())
        let spaces = UserSpaces(container: fixture.container, databases: databases)
        let ada = try spaces.space(for: "ada")
        let bob = try spaces.space(for: "bob@example.com")
        try await populate(ada)
        try await populate(bob)
        #expect(try spaces.users() == ["ada", "bob@example.com"])
        try databases.close("ada")
        try databases.close("bob@example.com")
        let everything = [fixture.root]
        let before = try snapshot(everything)

        let report = try await spaces.wipe(user: "ada")
        #expect(!report.resumed && report.removedDatabase)
        #expect(Set(report.removed.map(\.area)) == ["caches", "data", "temporary"])
        #expect(report.bytesRemoved.rawValue >= 20 * 20_000)

        let after = try snapshot(everything)
        let adaPaths = [
            ada.cachesDirectory, ada.dataDirectory, ada.temporaryDirectory, try databases.userDirectory("ada"),
        ]
        .map(\.path)
        let expected = before.filter { path, _ in !adaPaths.contains { path.hasPrefix($0) } }
        #expect(after == expected, "bob's files (and everything not ada's) are unchanged")
        #expect(after.keys.contains { $0.contains("bob@example.com") })
        #expect(!after.keys.contains { $0.contains("/ada/") || $0.contains(".wiping-") })
        #expect(try spaces.users() == ["bob@example.com"])

        // Bob's stores still open and read.
        #expect(try bob.secrets().string(service: "api", account: "bob@example.com") == "token of bob@example.com")
        #expect(try bob.preferences()[PreferenceKey<String>("name", default: "")] == "bob@example.com")
        let bobNotes = try await bob.database().read { db in try String.fetchAll(db, sql: "SELECT text FROM note") }
        #expect(bobNotes == ["bob@example.com"])
        // Ada starts again from nothing.
        let again = try spaces.space(for: "ada")
        #expect(try again.preferences()[PreferenceKey<String>("name", default: "")] == "")
        #expect(try await again.diskCache("images").usage().count == 0)
    }

    @Test("a wipe cut short after its renames is finished by the next UserSpaces before any space is served")
    func interruptedWipe() async throws {
        let fixture = try PopulatedContainer()
        let databases = UserDatabases(container: fixture.container, migrator: noteMigrator())
        let ada = try UserSpaces(container: fixture.container, databases: databases).space(for: "ada")
        try await populate(ada)
        try databases.close("ada")
        // The state a kill -9 leaves after the journal and the first rename.
        let wipes = fixture.container.url(for: .applicationSupport).appending(path: "Stowage/wipes")
        try FileManager.default.createDirectory(at: wipes, withIntermediateDirectories: true)
        try Data(#"{"format":1,"user":"ada","started":0}"#.utf8).write(to: wipes.appending(path: "ada.json"))
        let tombstone = ada.cachesDirectory.deletingLastPathComponent().appending(path: ".wiping-ada-1")
        try FileManager.default.moveItem(at: ada.cachesDirectory, to: tombstone)

        let reopened = UserSpaces(container: fixture.container, databases: databases)
        let space = try reopened.space(for: "ada")
        #expect(!FileManager.default.fileExists(atPath: tombstone.path))
        #expect(!FileManager.default.fileExists(atPath: space.dataDirectory.path))
        #expect(!FileManager.default.fileExists(atPath: wipes.appending(path: "ada.json").path))
        #expect(try reopened.users().isEmpty)
    }

    @Test("a wipe refused because another store has the database open stays pending and finishes later")
    func busyDatabase() async throws {
        let fixture = try PopulatedContainer()
        let databases = UserDatabases(container: fixture.container, migrator: noteMigrator())
        let spaces = UserSpaces(container: fixture.container, databases: databases)
        try await populate(try spaces.space(for: "ada"))
        let other = UserDatabases(container: fixture.container, migrator: noteMigrator())
        _ = try await other.database(for: "ada")
        try databases.close("ada")

        let error = await #expect(throws: StowageError.self) { try await spaces.wipe(user: "ada") }
        #expect(error?.code == .busy)
        // Ada is not served half-wiped (her directories are gone, her database is not); bob is.
        let refused = #expect(throws: StowageError.self) { try spaces.space(for: "ada") }
        #expect(refused?.code == .busy)
        let adaData = fixture.container.url(for: .applicationSupport).appending(path: "users/ada")
        #expect(!FileManager.default.fileExists(atPath: adaData.path))
        #expect(try spaces.space(for: "bob").user == "bob")
        try other.close("ada")
        let finished = try UserSpaces(container: fixture.container, databases: databases).finishPendingWipes()
        #expect(finished.map(\.user) == ["ada"])
        #expect(finished.first?.removedDatabase == true)
    }

    @Test("user ids that could leave their directory are refused")
    func badIDs() throws {
        let fixture = try PopulatedContainer()
        let spaces = UserSpaces(container: fixture.container)
        for id in ["", "..", "a/b", ".hidden", String(repeating: "x", count: 129)] {
            #expect(throws: StowageError.self) { try spaces.space(for: id) }
        }
    }

    @Test("a space of UserSpaces made without databases refuses database() as invalidConfiguration")
    func databaseWithoutDatabases() async throws {
        let fixture = try PopulatedContainer()
        let space = try UserSpaces(container: fixture.container).space(for: "ada")
        let error = try await #require(throws: StowageError.self) { _ = try await space.database() }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("UserSpaces(container:databases:)"))
    }

    @Test("a user's directory that is a symbolic link is removed as a link: the wipe finishes and never follows it")
    func wipeOfALinkedUserDirectory() async throws {
        let fixture = try PopulatedContainer()
        let spaces = UserSpaces(container: fixture.container)
        let elsewhere = fixture.root.appending(path: "elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: elsewhere.appending(path: "keep.txt"))
        let users = fixture.root.appending(path: "Library/Caches/users")
        try FileManager.default.createDirectory(at: users, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: users.appending(path: "ada").path,
            withDestinationPath: elsewhere.path
        )
        let report = try await spaces.wipe(user: "ada")
        #expect(report.skipped.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: users.path).isEmpty, "the link went")
        #expect(FileManager.default.fileExists(atPath: elsewhere.appending(path: "keep.txt").path))
        #expect(try spaces.space(for: "ada").user == "ada", "no wipe is left pending")
    }
}
