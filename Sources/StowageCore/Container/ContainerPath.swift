import Foundation

/// A path inside a container, written as in an iOS sandbox: `Documents/SomePath`,
/// `Library/Caches/images`, `tmp/upload`.
///
/// The first components name one of the container's five locations (`Documents`,
/// `Library/Application Support`, `Library/Caches`, `Library/Preferences`, `tmp`); the rest is
/// relative to that location's directory, wherever the platform puts it (XDG on Linux). The
/// location's directory is the root the path is confined to.
///
/// Parsing refuses what could leave the container before anything touches the disk: an
/// absolute path, a `~`, a `..` component, or a first component that names no location.
package struct ContainerPath: Sendable, Hashable, CustomStringConvertible {
    /// The location the path is in.
    package var location: Location
    /// The components below the location's directory, without `.` and empty ones.
    package var components: [String]

    /// The sandbox-style prefix of each location, longest first.
    package static let prefixes: [(prefix: [String], location: Location)] = [
        (["Library", "Application Support"], .applicationSupport),
        (["Library", "Caches"], .caches),
        (["Library", "Preferences"], .preferences),
        (["Documents"], .documents),
        (["tmp"], .temporary),
    ]

    /// Parses `text`.
    ///
    /// - Parameter subject: What the path belongs to, for messages: `"task 2 (Path 'x')"`.
    /// - Throws: `StowageError` `.pathEscapesRoot` for an absolute path, `~` or `..`;
    ///   `.invalidArgument` for an empty path, one with NUL or control bytes (``PathInput``) or
    ///   one that names no location.
    package init(parsing text: String, subject: String) throws {
        // The one place container paths from manifests, the registry and API arguments enter:
        // a NUL here would end the path early at the system call, after the `..` check below.
        try PathInput.check(text, subject: subject)
        if text.hasPrefix("/") || text.hasPrefix("~") {
            throw StowageError(
                code: .pathEscapesRoot,
                message:
                    "\(subject): \(PathInput.quoted(text)) is an absolute path; write it relative to the container, "
                    + "starting with a location, e.g. 'Library/Caches/images'",
                path: text
            )
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
        if parts.contains("..") {
            throw StowageError(
                code: .pathEscapesRoot,
                message:
                    "\(subject): \(PathInput.quoted(text)) contains a '..' component, which could leave the container; "
                    + "name the directory directly",
                path: text
            )
        }
        guard let match = Self.prefixes.first(where: { parts.starts(with: $0.prefix) }) else {
            throw StowageError(
                code: .invalidArgument,
                message:
                    "\(subject): \(PathInput.quoted(text)) does not start with a container location; start it with "
                    + "Documents/, Library/Application Support/, Library/Caches/, Library/Preferences/ or tmp/",
                path: text
            )
        }
        location = match.location
        components = Array(parts.dropFirst(match.prefix.count))
    }

    package init(location: Location, components: [String]) {
        self.location = location
        self.components = components
    }

    /// The normalized sandbox-style form: `Library/Caches/images`.
    package var description: String {
        let prefix = Self.prefixes.first { $0.location == location }!.prefix
        return (prefix + components).joined(separator: "/")
    }

    /// Where the path is in `container`, without touching the file system.
    package func url(in container: Container) -> URL {
        components.reduce(container.url(for: location)) { $0.appending(path: $1) }
    }
}
