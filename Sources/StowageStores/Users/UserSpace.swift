import Foundation
import GRDB
import StowageCache
import StowageCookies
import StowageCore
import StowageDatabase
import StowagePreferences
import StowageSecrets

/// One signed-in user's corner of a container: their caches, preferences, secrets, files and
/// database, kept apart from every other user's and removed together by
/// `UserSpaces/wipe(user:)`.
///
/// | what | where |
/// |---|---|
/// | caches (``diskCache(_:configuration:)``, ``cachesDirectory``) | caches/users/USER/ |
/// | files, preferences, secrets (``dataDirectory``) | application support/users/USER/ |
/// | cookies (``cookies(configuration:)``) | application support/users/USER/Cookies/ |
/// | scratch files (``temporaryDirectory``) | temporary/users/USER/ |
/// | database (``database()``) | application support/databases/USER/ (`UserDatabases`) |
public struct UserSpace: Sendable {
    /// The user's id.
    public let user: String
    /// The container the space is in.
    public let container: Container
    let databases: UserDatabases?

    /// The user's caches: regenerable, emptied by "clear caches".
    public var cachesDirectory: URL { Self.cachesDirectory(of: user, in: container) }
    /// The user's durable files: preferences, secrets, and whatever the app keeps there.
    public var dataDirectory: URL { Self.dataDirectory(of: user, in: container) }
    /// The user's scratch files.
    public var temporaryDirectory: URL { Self.temporaryDirectory(of: user, in: container) }

    /// Opens the user's disk cache `name` (one path component).
    ///
    /// The caller owns the cache it gets and closes it (`DiskCache.close()`) when done, as with
    /// any `DiskCache`: closing commits its staged writes and buffered access times and ends its
    /// background work; releasing it unclosed does no I/O, so what it had staged is lost. Each
    /// call opens a new handle; close each one.
    ///
    /// - Throws: `StowageError` `.invalidArgument` for a name that is not 1 to 200 letters,
    ///   digits, `.`, `-` or `_`; otherwise what `DiskCache.init(directory:configuration:)` throws.
    public func diskCache(_ name: String, configuration: DiskCache.Configuration? = nil) throws -> DiskCache {
        guard PlainName.isValid(name, maximumLength: 200, extra: [], allowsLeadingDot: false) else {
            throw StowageError.invalidArgument(
                "a user's cache name must be 1 to 200 letters, digits, '.', '-' or '_', not \(name.debugDescription)"
            )
        }
        return try DiskCache(
            directory: cachesDirectory.appending(path: name, directoryHint: .isDirectory),
            configuration: configuration ?? DiskCache.Configuration(name: name)
        )
    }

    /// The user's preferences (one suite, in their data directory).
    public func preferences(
        configuration: Preferences.Configuration = Preferences.Configuration()
    ) throws -> Preferences {
        try DirectoryCreation.createDirectory(at: dataDirectory)
        return try Preferences.open(
            at: dataDirectory.appending(path: "preferences.stowprefs"),
            configuration: configuration
        )
    }

    /// The user's cookie store, `Cookies/cookies.stowcookies` in their data directory: the
    /// role of an app's `Library/Cookies`. Durable (cookies cannot be downloaded again, so
    /// "clear caches" leaves them), counted by the storage account, removed by
    /// `UserSpaces/wipe(user:)`.
    ///
    /// Open it once per user and share it (for instance with `CachingHTTPClient`): two stores
    /// on one file each overwrite the other's changes.
    public func cookies(configuration: CookieStore.Configuration = CookieStore.Configuration()) throws -> CookieStore {
        try CookieStore.open(at: Self.cookiesFile(of: user, in: container), configuration: configuration)
    }

    static func cookiesFile(of user: String, in container: Container) -> URL {
        dataDirectory(of: user, in: container).appending(path: "Cookies/cookies.stowcookies")
    }

    /// The user's secret store, encrypted with `masterKey` (default: the container's key file).
    public func secrets(masterKey: SecretStore.MasterKey? = nil) throws -> SecretStore {
        try SecretStore(
            directory: dataDirectory.appending(path: "secrets", directoryHint: .isDirectory),
            masterKey: masterKey ?? .keyFile(SecretStore.defaultKeyFile(in: container)),
            area: "user:\(user)"
        )
    }

    /// The user's database, from the `UserDatabases` the spaces were made with.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` when ``UserSpaces`` was made without one.
    public func database() async throws -> DatabasePool {
        guard let databases else {
            throw StowageError.invalidConfiguration(
                "these user spaces have no database; pass UserDatabases to UserSpaces(container:databases:)"
            )
        }
        return try await databases.database(for: user)
    }

    static func cachesDirectory(of user: String, in container: Container) -> URL {
        container.url(for: .caches).appending(path: "users/\(user)", directoryHint: .isDirectory)
    }

    static func dataDirectory(of user: String, in container: Container) -> URL {
        container.url(for: .applicationSupport).appending(path: "users/\(user)", directoryHint: .isDirectory)
    }

    static func temporaryDirectory(of user: String, in container: Container) -> URL {
        container.url(for: .temporary).appending(path: "users/\(user)", directoryHint: .isDirectory)
    }
}
