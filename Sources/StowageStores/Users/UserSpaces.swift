import Foundation
import GRDB
import Logging
import StowageCache
import StowageCore
import StowageDatabase
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The user spaces of a container, and sign-out: `wipe(user:)` removes everything of one
/// user from every store, crash-safely.
///
/// ```swift
/// let spaces = UserSpaces(container: container, databases: databases)
/// let ada = try spaces.space(for: "ada")
/// try ada.preferences().set(true, for: .onboarded)
/// let report = try await spaces.wipe(user: "ada")      // on sign-out
/// ```
///
/// A wipe first writes a journal (`application support/Stowage/wipes/USER.json`), then moves
/// each of the user's directories out of the way (one atomic rename each), then deletes them
/// and the user's database, and removes the journal last. A wipe cut short (kill -9, power
/// loss) leaves its journal: the next ``UserSpaces`` of the container finishes it before it
/// serves anyone, so a half-wiped user is never handed out.
///
/// The user's disk caches (and memory tiers over them) and preferences that are open while the
/// wipe runs, in this process or another, are retired before their files go (see
/// `DiskCache/isRemoved`, `Preferences/isRemoved`): they read as empty and refuse writes, and
/// opening them again starts new, empty stores. Close the user's database pool first; a
/// database still open elsewhere makes the wipe fail with `.busy` and stay pending.
public final class UserSpaces: Sendable {
    /// The container.
    public let container: Container
    /// The user databases, if the app has them.
    public let databases: UserDatabases?
    /// Dates the wipe journals. Tests pass a clock they set.
    public let clock: CacheClock
    private let logger: Logger
    /// Wipes finished since opening, so that spaces are served without rereading the journals.
    private let recovered = Mutex(false)

    /// The user spaces of `container`, with `databases` for their databases; finishes wipes a
    /// crash interrupted when first used.
    public init(
        container: Container,
        databases: UserDatabases? = nil,
        clock: CacheClock = .system,
        logger: Logger = Logger(label: "org.stowage.user-spaces", factory: SwiftLogNoOpLogHandler.init)
    ) {
        self.container = container
        self.databases = databases
        self.clock = clock
        self.logger = logger
    }

    /// The space of `user`, finishing any wipe of the container that was cut short first.
    ///
    /// - Throws: `StowageError` `.invalidArgument` for a user id that cannot name a
    ///   directory; the error of a pending wipe of `user` that cannot be finished yet (`.busy`
    ///   while their database is open elsewhere): a half-wiped user is never served. Pending
    ///   wipes of other users that cannot be finished are logged and retried later.
    public func space(for user: String) throws -> UserSpace {
        try UserIdentifier.validate(user)
        try finishPendingWipes(requiring: user)
        return UserSpace(user: user, container: container, databases: databases)
    }

    /// The users that have anything stored, sorted.
    public func users() throws -> [String] {
        var users = Set<String>()
        for location in [Location.caches, .applicationSupport, .temporary] {
            let directory = container.url(for: location).appending(path: "users")
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.fileSystemPath)) ?? []
            where (try? UserIdentifier.validate(name)) != nil {
                users.insert(name)
            }
        }
        if let databases { users.formUnion(try databases.users()) }
        return users.sorted()
    }

    /// Removes everything of `user`: caches, files, preferences, secrets, scratch files and
    /// database. Other users are not touched.
    ///
    /// - Throws: `StowageError`: `.invalidArgument` for a bad user id; `.busy` when the
    ///   user's database is open in another store or process (the wipe stays pending and is
    ///   finished by the next ``space(for:)`` or wipe).
    @discardableResult
    public func wipe(user: String) async throws -> WipeReport {
        try UserIdentifier.validate(user)
        return try await BlockingWork.run { try self.wipe(user: user) }
    }

    /// The synchronous overload of `wipe(user:)`: the same work on the calling thread.
    @discardableResult
    public func wipe(user: String) throws -> WipeReport {
        try UserIdentifier.validate(user)
        let journal = WipeJournal(container: container, clock: clock)
        try journal.begin(user)
        recovered.withLock { $0 = false }
        return try carryOut(user, journal: journal, resumed: false)
    }

    /// Finishes every wipe whose journal is still there (interrupted by a crash, or refused
    /// because the database was busy).
    ///
    /// - Returns: What the finished wipes removed.
    /// - Throws: The first wipe's error; the others are still attempted.
    @discardableResult
    public func finishPendingWipes() throws -> [WipeReport] {
        try finishPendingWipes(requiring: nil)
    }

    /// Finishes pending wipes; throws only for `required` (or, when `nil`, for the first failure).
    @discardableResult
    private func finishPendingWipes(requiring required: String?) throws -> [WipeReport] {
        if recovered.withLock({ $0 }) { return [] }
        let journal = WipeJournal(container: container, clock: clock)
        var reports: [WipeReport] = []
        var failure: (any Error)?
        var allFinished = true
        for user in try journal.pending() {
            logger.notice("finishing a pending wipe", metadata: ["user": "\(user)"])
            do {
                reports.append(try carryOut(user, journal: journal, resumed: true))
            } catch {
                allFinished = false
                logger.warning("a pending wipe cannot finish yet", metadata: ["user": "\(user)", "error": "\(error)"])
                if required == nil || required == user { failure = failure ?? error }
            }
        }
        if allFinished { recovered.withLock { $0 = true } }
        if let failure { throw failure }
        return reports
    }

    private func carryOut(_ user: String, journal: WipeJournal, resumed: Bool) throws -> WipeReport {
        var report = WipeReport(user: user, resumed: resumed)
        let directories: [(area: String, directory: URL, location: Location)] = [
            ("caches", UserSpace.cachesDirectory(of: user, in: container), .caches),
            ("data", UserSpace.dataDirectory(of: user, in: container), .applicationSupport),
            ("temporary", UserSpace.temporaryDirectory(of: user, in: container), .temporary),
        ]
        // Each area stays on its location's file system and mount (FileSystemBoundary, as
        // `rm --one-file-system`), however its directories are reached.
        var boundaries: [String: FileSystemBoundary] = [:]
        for (area, _, location) in directories { boundaries[area] = try container.fileSystemBoundary(of: location) }
        // First every rename (each atomic), so that the user has nothing left to serve as soon
        // as possible; then the deletions, which may take long.
        var moved: [(String, URL)] = []
        for (area, directory, _) in directories {
            switch try moveAway(directory, user: user, boundary: boundaries[area]) {
            case .moved(let tombstone): moved.append((area, tombstone))
            case .absent: break
            case .mountPoint:
                // Another file system's, as a mount inside it is: left whole where it is, named.
                report.skipped.append(.init(path: directory.fileSystemPath, message: FileSystemBoundary.skipMessage))
                logger.warning(
                    "wipe: \(FileSystemBoundary.skipMessage)",
                    metadata: ["user": "\(user)", "path": "\(directory.fileSystemPath)"]
                )
            }
        }
        for (area, directory, _) in directories {
            // Tombstones of an earlier, interrupted attempt.
            let parent = directory.deletingLastPathComponent()
            for name in (try? FileManager.default.contentsOfDirectory(atPath: parent.fileSystemPath)) ?? []
            where name.hasPrefix(Self.tombstonePrefix(user))
                && !moved.contains(where: { $0.1.lastPathComponent == name })
            {
                moved.append((area, parent.appending(path: name)))
            }
        }
        // The user is out of place now; a crash from here on leaves tombstones the next open
        // deletes (the kill tests wait for this line to land inside the deletions).
        logger.debug("user's directories moved away; deleting them", metadata: ["user": "\(user)"])
        for (area, tombstone) in moved {
            guard let cleared = try delete(tombstone, boundary: boundaries[area]) else { continue }
            report.removed.append(WipeReport.Area(area: area, entries: cleared.removedCount, bytes: cleared.bytesFreed))
            report.skipped += cleared.failures
        }
        let databases = self.databases ?? UserDatabases(container: container, migrator: DatabaseMigrator())
        let database = try databases.removeUser(user)
        report.removedDatabase = database.removed
        report.skipped += database.skipped
        try journal.end(user)
        logger.info(
            "user wiped",
            metadata: ["user": "\(user)", "bytes": "\(report.bytesRemoved.formatted(.compact))"]
        )
        return report
    }

    private static func tombstonePrefix(_ user: String) -> String { ".wiping-\(user)-" }

    /// What became of one of the user's directories.
    private enum Move {
        /// Renamed to this tombstone.
        case moved(URL)
        /// There was nothing to move.
        case absent
        /// A mount point, which Linux refuses to move (`EBUSY`), or a directory reached through a
        /// link to another file system: left in place.
        case mountPoint
    }

    /// Renames `directory` to a tombstone beside it, unless it is off `boundary`.
    private func moveAway(_ directory: URL, user: String, boundary: FileSystemBoundary?) throws -> Move {
        let parent = directory.deletingLastPathComponent()
        // A user's directory that is a mount point, or that a link on the way (`users` replaced by
        // a link) puts on another file system, is not the location's to rename or delete.
        if let boundary, !boundary.holdsDirectory(atPath: directory.fileSystemPath) { return .mountPoint }
        let tombstone = parent.appending(
            path: Self.tombstonePrefix(user) + String(UInt32.random(in: 0...UInt32.max), radix: 16),
            directoryHint: .isDirectory
        )
        guard FileNames.rename(directory.fileSystemPath, to: tombstone.fileSystemPath) else {
            if errno == ENOENT { return .absent }
            if errno == EBUSY, FileSystemBoundary.isMountPoint(user, in: parent.fileSystemPath) { return .mountPoint }
            throw StowageError.syscall(.current, "move the user's directory away", path: directory.fileSystemPath)
        }
        return .moved(tombstone)
    }

    /// Deletes `url` and everything below it, staying on `boundary` (its location's file
    /// system); `nil` when it was gone already.
    private func delete(_ url: URL, boundary: FileSystemBoundary?) throws -> ClearReport? {
        // Through DirectoryClearing.removeTree: a tombstone that is itself a mount point (a tree
        // mounted over a leftover's name) is named and left whole, never emptied; a mount inside
        // is another file system's and stays, named in the report, in the tombstone (renamed with
        // its directory, so the user still reads as empty).
        guard
            let report = try DirectoryClearing.removeTree(
                named: url.lastPathComponent,
                in: url.deletingLastPathComponent().fileSystemPath,
                staysOn: boundary
            )
        else { return nil }  // Deleted by another process finishing the same wipe.
        if let failure = report.failures.first(where: { !$0.isOtherFileSystem }) {
            throw StowageError(
                code: .ioError,
                message: "cannot delete all of a wiped user's data (\(failure)); the wipe stays pending and is "
                    + "retried on the next open",
                path: failure.path
            )
        }
        return report
    }
}
