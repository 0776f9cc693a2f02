import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The five locations of one app, resolved for the platform or under a root directory.
///
/// ```swift
/// // Linux: ~/.cache/com.example.reader, ~/.local/share/com.example.reader/documents, …
/// let container = try Container(identifier: "com.example.reader")
/// let caches = try await container.directory(for: .caches)   // created, tagged, excluded from backup
///
/// // Tests, servers, embedded use: root/Documents, root/Library/Caches, …
/// let rooted = Container(root: URL(filePath: "/srv/reader"))
/// ```
///
/// Resolving a container does no I/O; `directory(for:)` creates a location on first use with
/// the marks its ``Location`` calls for.
public struct Container: Sendable, Hashable {
    /// The app identifier, e.g. `com.example.reader`; for a rooted container, the root's name
    /// unless one was given.
    public let identifier: String
    /// The root directory of a rooted container, `nil` for a platform container.
    public let root: URL?
    private let urls: [Location: URL]

    /// A container at the platform's standard places for `identifier`.
    ///
    /// On Linux (XDG Base Directory Specification; a variable that is unset, empty or not an
    /// absolute path falls back to the specification's default):
    ///
    /// | location | path |
    /// |---|---|
    /// | documents | `$XDG_DATA_HOME/ID/documents` (default `~/.local/share`) |
    /// | application support | `$XDG_DATA_HOME/ID/application-support` |
    /// | caches | `$XDG_CACHE_HOME/ID` (default `~/.cache`) |
    /// | preferences | `$XDG_CONFIG_HOME/ID` (default `~/.config`) |
    /// | temporary | `$TMPDIR/ID-UID` (default `/tmp`), created `0700` and owned by the user |
    ///
    /// `$XDG_STATE_HOME` has no counterpart among the five locations (it is for logs and
    /// history that are neither backed up like data nor regenerable like caches), so it is not
    /// used. On Apple platforms the locations are FileManager's search-path directories: an
    /// iOS, tvOS, watchOS or visionOS app, or a sandboxed Mac app, uses its own container's
    /// directories as they are; a non-sandboxed Mac app gets `ID` appended, since it shares
    /// `~/Library` with every other app.
    ///
    /// - Parameters:
    ///   - identifier: A reverse-DNS style name: letters, digits, `.`, `-`, `_`; not `.` or `..`.
    ///   - environment: The variables to resolve with; defaults to the process environment.
    ///     Tests pass their own instead of mutating the process's.
    /// - Throws: ``StowageError`` with code `.invalidArgument` for a bad identifier, `.notFound`
    ///   when no home directory can be found.
    public init(identifier: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try Self.validate(identifier: identifier)
        self.identifier = identifier
        self.root = nil
        self.urls = try Self.platformURLs(identifier: identifier, environment: environment)
    }

    /// A container under `root`: `root/Documents`, `root/Library/Application Support`,
    /// `root/Library/Caches`, `root/Library/Preferences` and `root/tmp`, as an iOS sandbox
    /// lays them out.
    ///
    /// - Parameters:
    ///   - root: The container's root directory; a relative path is resolved against the
    ///     current directory now.
    ///   - identifier: A name for logs and reports; defaults to the root's last component.
    public init(root: URL, identifier: String? = nil) {
        let root = root.standardizedFileURL.absoluteURL
        self.root = root
        self.identifier = identifier ?? root.lastPathComponent
        self.urls = Dictionary(
            uniqueKeysWithValues: Location.allCases.map { location in
                let relative = Self.rootedComponents(of: location).joined(separator: "/")
                return (location, root.appending(path: relative, directoryHint: .isDirectory))
            }
        )
    }

    /// Where `location` is, without touching the file system.
    public func url(for location: Location) -> URL {
        urls[location]!
    }

    /// Returns `location`'s directory, creating it (and missing parents, `0700`) on first use.
    ///
    /// Caches get a `CACHEDIR.TAG`, the backup exclusion and the purgeable mark; temporary gets
    /// the backup exclusion and the purgeable mark. Where the file system has no extended
    /// attributes the directory is still created and the marks are left off; ``Marks`` reports
    /// that as `.unsupported` when asked.
    ///
    /// - Throws: ``StowageError`` when the directory cannot be created, or when the temporary
    ///   directory exists but belongs to another user (`.permissionDenied`).
    public func directory(for location: Location) async throws -> URL {
        try await BlockingWork.run { try directory(for: location) }
    }

    /// The synchronous overload of `directory(for:)`: the same work on the calling thread.
    public func directory(for location: Location) throws -> URL {
        let url = url(for: location)
        if root == nil {
            try DirectoryCreation.createDirectory(at: url, privateToOwner: location == .temporary)
        } else if let descriptor = try openLocationDirectory(location, creating: true) {
            // Rooted: created and opened confined to the root, so marks never land outside it.
            close(descriptor)
        }
        try applyMarks(for: location, at: url)
        return url
    }

    private func applyMarks(for location: Location, at url: URL) throws {
        guard !location.isBackedUp else { return }
        if location == .caches { try CacheDirectoryTag.write(in: url) }
        do {
            if try !Marks.isExcludedFromBackup(url) { try Marks.setExcludedFromBackup(true, at: url) }
            if try !Marks.isPurgeable(url) { try Marks.setPurgeable(true, at: url) }
        } catch StowageError.Code.unsupported {
            // No xattrs here (e.g. an old tmpfs): the directory is still usable; the report
            // shows the marks as unsupported rather than pretending they are set.
        }
    }

    private static func validate(identifier: String) throws {
        guard PlainName.isValid(identifier, maximumLength: 255, allowsLeadingDot: true) else {
            throw StowageError.invalidArgument(
                "'\(identifier)' is not a valid container identifier: use 1 to 255 ASCII letters, digits, "
                    + "'.', '-' or '_' (not '.' or '..'), e.g. 'com.example.reader'"
            )
        }
    }
}
