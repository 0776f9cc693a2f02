import Foundation
import GRDB
import StowageCore
import StowageDatabase
import StowageTestSupport
import Testing

/// Several stores (standing in for several processes: SQLite and `flock` treat separate
/// connections and open files alike) on one user's database.
@Suite("UserDatabases shared between stores")
struct UserDatabasesSharingTests {
    private static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "item") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("value", .integer).notNull()
            }
        }
        return migrator
    }

    /// A container in a fresh temporary directory, removed with the returned value.
    private static func scratchContainer(_ name: String = #function) throws -> (TemporaryDirectory, Container) {
        let scratch = try TemporaryDirectory(name)
        return (scratch, Container(root: scratch.url, identifier: "org.stowage.tests"))
    }

    @Test("two stores opening a brand-new database at the same moment both succeed (busy timeout)")
    func concurrentFirstOpen() async throws {
        let (scratch, container) = try Self.scratchContainer()
        defer { withExtendedLifetime(scratch) {} }
        for round in 0..<20 {
            let user = "user\(round)"
            let first = UserDatabases(container: container, migrator: Self.migrator())
            let second = UserDatabases(container: container, migrator: Self.migrator())
            async let a = first.database(for: user)
            async let b = second.database(for: user)
            let (poolA, poolB) = try await (a, b)
            try await poolA.write { db in try db.execute(sql: "INSERT INTO item (value) VALUES (1)") }
            try await poolB.write { db in try db.execute(sql: "INSERT INTO item (value) VALUES (2)") }
            #expect(try await poolA.read { db in try Int.fetchOne(db, sql: "SELECT SUM(value) FROM item") } == 3)
            try first.close(user)
            try second.close(user)
        }
    }

    @Test("removal is refused with .busy while another store has the user open, and works after it closes")
    func removalWaitsForOtherStores() async throws {
        let (scratch, container) = try Self.scratchContainer()
        defer { withExtendedLifetime(scratch) {} }
        let app = UserDatabases(container: container, migrator: Self.migrator())
        let settings = UserDatabases(container: container, migrator: Self.migrator())
        let pool = try await app.database(for: "ada")
        try await pool.write { db in try db.execute(sql: "INSERT INTO item (value) VALUES (7)") }

        let refusal = await #expect(throws: StowageError.self) { try await settings.removeUser("ada") }
        #expect(refusal?.code == .busy)
        #expect(FileManager.default.fileExists(atPath: try app.databaseURL("ada").path))
        #expect(try await pool.read { db in try Int.fetchOne(db, sql: "SELECT value FROM item") } == 7)

        try app.close("ada")
        #expect(try await settings.removeUser("ada").removed)
        #expect(!FileManager.default.fileExists(atPath: try app.userDirectory("ada").path))
        #expect(try settings.users().isEmpty)
        // Opening again starts from an empty, migrated database.
        let fresh = try await app.database(for: "ada")
        #expect(try await fresh.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") } == 0)
    }

    /// One store holding "ada" open and another removing her on a stepped wait clock, ready once
    /// the removal found the lock held and waits on the clock for its next try.
    private struct RemovalWaitingForALock {
        let scratch: TemporaryDirectory
        let clock = SteppedClock()
        /// The store holding the database open.
        let app: UserDatabases
        let removal: Task<UserDatabases.Removal, any Error>

        init(_ name: String = #function) async throws {
            let (scratch, container) = try UserDatabasesSharingTests.scratchContainer(name)
            self.scratch = scratch
            var configuration = UserDatabases.Configuration()
            configuration.waitClock = clock
            app = UserDatabases(container: container, migrator: UserDatabasesSharingTests.migrator())
            let settings = UserDatabases(
                container: container,
                migrator: UserDatabasesSharingTests.migrator(),
                configuration: configuration
            )
            _ = try await app.database(for: "ada")
            removal = Task { try await settings.removeUser("ada") }
            try await eventually { clock.sleeperCount == 1 }
        }
    }

    @Test("a removal waits for a held lock on the wait clock: it succeeds when the lock goes within its patience")
    func removalPatienceFollowsTheClock() async throws {
        let held = try await RemovalWaitingForALock()
        defer { withExtendedLifetime(held.scratch) {} }
        held.clock.advance(by: .milliseconds(500))
        try await eventually { held.clock.sleeperCount == 1 }
        #expect(FileManager.default.fileExists(atPath: try held.app.userDirectory("ada").path), "still waiting")
        try held.app.close("ada")
        held.clock.advance(by: .milliseconds(10))
        #expect(try await held.removal.value.removed, "the next try took the lock")
        #expect(!FileManager.default.fileExists(atPath: try held.app.userDirectory("ada").path))
    }

    @Test("a removal gives up with .busy once its patience has passed on the wait clock")
    func removalGivesUpOnTheClock() async throws {
        let held = try await RemovalWaitingForALock()
        defer { withExtendedLifetime(held.scratch) {} }
        held.clock.advance(by: .seconds(1))
        let refusal = await #expect(throws: StowageError.self) { try await held.removal.value }
        #expect(refusal?.code == .busy)
        #expect(held.clock.sleeperCount == 0)
        #expect(FileManager.default.fileExists(atPath: try held.app.databaseURL("ada").path))
        try held.app.close("ada")
    }

    @Test("a removal interrupted after its rename is finished by the next removal; the user is gone at once")
    func interruptedRemovalLeftovers() async throws {
        let (scratch, container) = try Self.scratchContainer()
        defer { withExtendedLifetime(scratch) {} }
        let databases = UserDatabases(container: container, migrator: Self.migrator())
        _ = try await databases.database(for: "ada")
        try databases.close("ada")
        // What a removal leaves when the process dies between its rename and its deletion.
        let directory = try databases.userDirectory("ada")
        let leftover = directory.deletingLastPathComponent().appending(path: ".removing-ada-1")
        try FileManager.default.moveItem(at: directory, to: leftover)
        #expect(try databases.users().isEmpty)

        _ = try await databases.database(for: "bob")
        #expect(try await databases.removeUser("bob").removed)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(try databases.users().isEmpty)
    }
}
