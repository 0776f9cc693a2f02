import Foundation
import GRDB
import Logging
import StowageCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One SQLite database per user, through GRDB: the role of Core Data stores and hand-written
/// SQLite for an app where several people sign in.
///
/// ```swift
/// var migrator = DatabaseMigrator()
/// migrator.registerMigration("v1") { db in
///     try db.create(table: "note") { t in
///         t.autoIncrementedPrimaryKey("id")
///         t.column("text", .text).notNull()
///     }
/// }
/// let databases = UserDatabases(container: container, migrator: migrator)
/// let pool = try await databases.database(for: "ada")     // created and migrated on first use
/// try await pool.write { db in try Note(text: "hello").insert(db) }
/// ```
///
/// Each user's database lives in its own directory, `application support/databases/USER/`,
/// as `NAME.sqlite` with its `-wal` and `-shm` files: a `DatabasePool` in WAL mode (readers
/// never wait for the writer). The migrator runs each time a database is opened, so a new app
/// version migrates every user's file on their next use. `removeUser(_:)` closes the pool and
/// deletes the directory, leaving nothing of that user behind.
///
/// Several processes (or several `UserDatabases`) may open one user's database at once: SQLite
/// coordinates them, and a 5-second busy timeout is the default so that two first opens of a new
/// file wait for each other instead of failing with "database is locked". A shared lock on the
/// user's `.lock` file, held while the database is open, makes a removal anywhere else fail with
/// `StowageError/Code/busy` instead of deleting files from under a live pool.
///
/// GRDB is not hidden: `database(for:)` returns its `DatabasePool`, for records,
/// `ValueObservation` and everything else GRDB offers.
public final class UserDatabases: Sendable {
    /// The container whose application-support location holds the databases.
    public let container: Container
    /// The file name of each user's database, without `.sqlite`.
    public let name: String
    private let migrator: DatabaseMigrator
    /// How the databases are opened, and where that is logged.
    public let configuration: Configuration
    private let poolConfiguration: GRDB.Configuration
    private var logger: Logger { configuration.logger }
    private let open = Mutex<[String: OpenDatabase]>([:])

    /// A pool and the shared lock that keeps its files from being removed elsewhere.
    private struct OpenDatabase {
        let pool: DatabasePool
        let lock: UserDirectoryLock
    }

    /// Databases named `name` for the users of `container`, migrated with `migrator`.
    ///
    /// - Parameters:
    ///   - container: The container whose users' spaces hold the databases.
    ///   - name: The database's file name in each user's space, without extension.
    ///   - migrator: The migrations run on each database when it is first opened.
    ///   - configuration: GRDB's configuration for each pool and the logger.
    public init(
        container: Container,
        name: String = "main",
        migrator: DatabaseMigrator,
        configuration: Configuration = Configuration()
    ) {
        self.container = container
        self.name = name
        self.migrator = migrator
        self.configuration = configuration
        var pool = configuration.database
        if case .immediateError = pool.busyMode { pool.busyMode = .timeout(5) }
        poolConfiguration = pool
    }

    // MARK: - Opening

    /// The database of `user`, created and migrated on first use; the same pool afterwards.
    ///
    /// - Parameter user: 1 to 128 letters, digits, `.`, `-`, `_` or `@`, not starting with `.`
    ///   (an account id, not a display name).
    /// - Throws: `StowageError` `.invalidArgument` for a user id that could leave the databases
    ///   directory; GRDB's `DatabaseError` when the file is not a database or a migration fails.
    public func database(for user: String) async throws -> DatabasePool {
        try await BlockingWork.run { try self.database(for: user) }
    }

    /// The synchronous overload of `database(for:)`: the same work on the calling thread.
    public func database(for user: String) throws -> DatabasePool {
        try UserIdentifier.validate(user)
        return try open.withLock { open in
            if let database = open[user] { return database.pool }
            let directory = try userDirectory(user)
            try DirectoryCreation.createDirectory(at: directory)
            let lock = try UserDirectoryLock.acquire(in: directory, exclusive: false, user: user)
            let pool: DatabasePool
            do {
                pool = try UserDirectoryLock.whileOpening(in: directory) {
                    let pool = try DatabasePool(path: databaseURL(user).path, configuration: poolConfiguration)
                    do {
                        try migrator.migrate(pool)
                    } catch {
                        try? pool.close()
                        throw error
                    }
                    return pool
                }
            } catch {
                lock.release()
                throw error
            }
            open[user] = OpenDatabase(pool: pool, lock: lock)
            logger.debug("database opened", metadata: ["user": "\(user)", "path": "\(pool.path)"])
            return pool
        }
    }

    /// Closes `user`'s database in this store, if open, so that it can be removed elsewhere.
    /// The next `database(for:)` opens it again.
    ///
    /// - Throws: GRDB's error when the pool cannot close because it is still in use (an
    ///   unfinished read or write, a live `ValueObservation`); the database stays open then.
    public func close(_ user: String) throws {
        try UserIdentifier.validate(user)
        try open.withLock { open in
            guard let database = open[user] else { return }
            try database.pool.close()
            database.lock.release()
            open[user] = nil
        }
    }

    // MARK: - Users

    /// The users that have a database, sorted.
    public func users() throws -> [String] {
        let directory = databasesDirectory
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch CocoaError.fileReadNoSuchFile {
            return []
        } catch {
            // Foundation's NSError names no cause a person can act on; the system call does.
            let path = directory.path(percentEncoded: false)
            if FileStatus.of(path) == nil {
                if errno == ENOENT { return [] }
                throw StowageError.syscall(.current, "list the user databases in", path: path)
            }
            throw StowageError(
                code: .notADirectory,
                message: "cannot list the user databases: \(PathInput.quoted(path)) is not a readable directory "
                    + "(\(error.localizedDescription)); check the container root",
                path: path,
                cause: error
            )
        }
        return names.filter { user in
            (try? UserIdentifier.validate(user)) != nil
                && FileManager.default.fileExists(
                    atPath: directory.appending(path: user).appending(path: name + ".sqlite").path
                )
        }.sorted()
    }

    /// Copies `user`'s database, consistently while it is in use, into a new SQLite file at
    /// `destination` (SQLite's online backup; the copy is a single file, without WAL).
    ///
    /// - Throws: `StowageError` `.notFound` when the user has no database, `.invalidArgument`
    ///   when `destination` exists (nothing is overwritten).
    public func backup(user: String, to destination: URL) async throws {
        try await BlockingWork.run { try self.backup(user: user, to: destination) }
    }

    /// The synchronous overload of `backup(user:to:)`: the same work on the calling thread.
    public func backup(user: String, to destination: URL) throws {
        try requireDatabase(of: user)
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw StowageError(
                code: .invalidArgument,
                message: "the backup destination \(destination.path) exists; choose a new file name",
                path: destination.path
            )
        }
        let pool = try database(for: user)
        let copy = try DatabaseQueue(path: destination.path)
        do {
            try pool.backup(to: copy)
            try copy.close()
        } catch {
            try? copy.close()
            try? FileManager.default.removeItem(at: destination)
            throw error
        }
    }

    /// Closes `user`'s database and deletes its directory: the database, its WAL and shared
    /// memory files, and anything else stored there. Returns whether there was one.
    ///
    /// The directory is first renamed out of the way under the user's exclusive lock (one atomic
    /// step: from then on the user has no database, even if the process dies before the files
    /// are deleted), then deleted; leftovers of an interrupted removal are deleted on the next
    /// removal.
    ///
    /// No removal leaves the application support location's file system, as
    /// `rm --one-file-system`: a mount point inside the user's directory (another file system, or
    /// a bind mount of the same one) stays with everything under it, in the renamed directory
    /// (out of the user's reach); a user's directory that is itself a mount point, or is reached
    /// through a link onto another file system, is neither locked nor renamed and stays where it
    /// is, whole; so does a leftover of an earlier removal that is a mount point. Each is named in
    /// ``Removal/skipped`` (`"skipped: another file system"`; another user's leftover is only
    /// logged) and the rest is removed. A user's directory or leftover that is a symbolic link is
    /// removed as a link, never followed.
    ///
    /// - Returns: Whether there was a database, and the mount points left in place.
    /// - Throws: `StowageError` `.busy` when another store or process still has the database
    ///   open after a second (close it there first); GRDB's error when this store's pool cannot close because the
    ///   app still uses it (an unfinished read or write, a live `ValueObservation`). Nothing is
    ///   deleted then.
    @discardableResult
    public func removeUser(_ user: String) async throws -> Removal {
        try await BlockingWork.run { try self.removeUser(user) }
    }

    /// How long a removal waits for shared locks to go before it reports `.busy`: long enough
    /// for a lock a child process briefly holds between `fork` and `exec`, short enough for a
    /// caller to wait out.
    static let removalPatience: Duration = .seconds(1)

    /// The synchronous overload of `removeUser(_:)`: the same work on the calling thread.
    @discardableResult
    public func removeUser(_ user: String) throws -> Removal {
        try UserIdentifier.validate(user)
        return try open.withLock { open in
            if let database = open[user] {
                try database.pool.close()
                database.lock.release()
                open[user] = nil
            }
            var removal = Removal(user: user)
            // Every removal stays on the application support location's file system and mount
            // (FileSystemBoundary, as `rm --one-file-system`).
            let boundary = try container.fileSystemBoundary(of: .applicationSupport)
            // Mounts still in this user's own leftovers are named again; other users' are logged.
            removal.skipped = try deleteRemovalLeftovers(staysOn: boundary).filter {
                $0.path.hasPrefix(databasesDirectory.appending(path: ".removing-\(user)-").path)
            }
            let directory = try userDirectory(user)
            guard FileManager.default.fileExists(atPath: directory.path) else { return removal }
            // A user's directory that is a mount point, or is reached through a link to another
            // file system, is that file system's: left whole and named before the lock, whose
            // file would otherwise be made in it.
            if let boundary, !boundary.holdsDirectory(atPath: directory.path) {
                removal.skipped.append(.init(path: directory.path, message: FileSystemBoundary.skipMessage))
                logger.warning(
                    "user database directory: \(FileSystemBoundary.skipMessage)",
                    metadata: ["path": "\(directory.path)"]
                )
                return removal
            }
            let lock = try UserDirectoryLock.acquire(
                in: directory,
                exclusive: true,
                user: user,
                patience: Self.removalPatience,
                clock: ElapsedClock(configuration.waitClock)
            )
            defer { lock.release() }
            let leftover = databasesDirectory.appending(
                path: ".removing-\(user)-\(UInt32.random(in: 0...UInt32.max))",
                directoryHint: .isDirectory
            )
            guard FileNames.rename(directory.path, to: leftover.path) else {
                // Linux refuses to move a mount point (EBUSY): a user's directory that is one is
                // another file system's, left whole where it is and named, as a mount inside it is.
                if errno == EBUSY, FileSystemBoundary.isMountPoint(user, in: databasesDirectory.path) {
                    removal.skipped.append(.init(path: directory.path, message: FileSystemBoundary.skipMessage))
                    logger.warning(
                        "user database directory: \(FileSystemBoundary.skipMessage)",
                        metadata: ["path": "\(directory.path)"]
                    )
                    return removal
                }
                throw StowageError.syscall(.current, "move the user's directory away", path: directory.path)
            }
            removal.skipped += try deleteTree(leftover, staysOn: boundary)
            removal.removed = true
            logger.info("user database removed", metadata: ["user": "\(user)"])
            return removal
        }
    }

    /// What `removeUser(_:)` did.
    public struct Removal: Sendable, Hashable, Codable {
        /// The user whose database was removed.
        public var user: String
        /// Whether the user had a database directory, now removed (but for ``skipped``).
        public var removed = false
        /// Mount points left in place with everything under them (`"skipped: another file
        /// system"`, `ClearReport.Failure.isOtherFileSystem`): inside the user's directory (kept
        /// in a `.removing-` directory beside it, out of any user's reach), or the user's
        /// directory itself.
        public var skipped: [ClearReport.Failure] = []

        /// A removal of `user`'s database that has done nothing yet.
        public init(user: String) {
            self.user = user
        }
    }

    /// Deletes what removals interrupted by a crash left (directories renamed, not yet deleted).
    ///
    /// - Returns: The mount points left in them (logged too).
    private func deleteRemovalLeftovers(staysOn boundary: FileSystemBoundary?) throws -> [ClearReport.Failure] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: databasesDirectory.path)) ?? []
        var skipped: [ClearReport.Failure] = []
        for name in names where name.hasPrefix(".removing-") {
            skipped += try deleteTree(
                databasesDirectory.appending(path: name, directoryHint: .isDirectory),
                staysOn: boundary
            )
        }
        return skipped
    }

    /// Deletes `url` and everything below it through `DirectoryClearing.removeTree`, never
    /// leaving `boundary` (the location's file system), as `rm --one-file-system`: FileManager's
    /// `removeItem` descends into a mount point and deletes the mounted tree's files before
    /// failing on the mount point itself, and emptying the directory at the path would empty a
    /// tree mounted over a leftover's name. A mount inside stays, with the directory holding it
    /// (a `.removing-` name, out of any user's reach), and is logged and returned ("skipped:
    /// another file system"); so does a leftover that is itself a mount point. The next removal
    /// looks again. A leftover that is a symbolic link is removed as a link.
    private func deleteTree(_ url: URL, staysOn boundary: FileSystemBoundary?) throws -> [ClearReport.Failure] {
        guard
            let report = try DirectoryClearing.removeTree(
                named: url.lastPathComponent,
                in: url.deletingLastPathComponent().fileSystemPath,
                staysOn: boundary
            )
        else { return [] }  // Another process deleted it meanwhile.
        if let failure = report.failures.first(where: { !$0.isOtherFileSystem }) {
            throw StowageError(
                code: .ioError,
                message: "cannot delete \(url.path): \(failure); it holds a removed user's data, delete it by hand",
                path: url.path
            )
        }
        for skipped in report.failures {
            logger.warning(
                "user database directory: \(FileSystemBoundary.skipMessage)",
                metadata: ["path": "\(skipped.path)"]
            )
        }
        return report.failures
    }

    // MARK: - Paths

    /// The directory that holds every user's directory.
    private var databasesDirectory: URL {
        container.url(for: .applicationSupport).appending(path: "databases", directoryHint: .isDirectory)
    }

    /// The directory that holds `user`'s database files.
    public func userDirectory(_ user: String) throws -> URL {
        try UserIdentifier.validate(user)
        return databasesDirectory.appending(path: user, directoryHint: .isDirectory)
    }

    /// The database file of `user` (its `-wal` and `-shm` files sit beside it).
    public func databaseURL(_ user: String) throws -> URL {
        try userDirectory(user).appending(path: name + ".sqlite")
    }

    private func requireDatabase(of user: String) throws {
        let url = try databaseURL(user)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StowageError(
                code: .notFound,
                message: "user \(user.debugDescription) has no database (no \(url.path))",
                path: url.path
            )
        }
    }
}
