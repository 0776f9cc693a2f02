import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Container {
    static func platformURLs(identifier: String, environment: [String: String]) throws -> [Location: URL] {
        #if canImport(Darwin)
        return try appleURLs(identifier: identifier)
        #else
        return try xdgURLs(identifier: identifier, environment: environment)
        #endif
    }

    /// The XDG Base Directory layout (see ``init(identifier:environment:)``).
    static func xdgURLs(identifier: String, environment: [String: String]) throws -> [Location: URL] {
        let home = try homeDirectory(environment: environment)
        func base(_ variable: String, default relative: String) -> String {
            // The spec: "If an implementation encounters a relative path in any of these
            // variables it should consider the path invalid and ignore it."
            if let value = environment[variable], value.hasPrefix("/") { return value }
            return home + "/" + relative
        }
        let data = URL(filePath: base("XDG_DATA_HOME", default: ".local/share"), directoryHint: .isDirectory)
            .appending(path: identifier, directoryHint: .isDirectory)
        let temporaryBase = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        return [
            .documents: data.appending(path: "documents", directoryHint: .isDirectory),
            .applicationSupport: data.appending(path: "application-support", directoryHint: .isDirectory),
            .caches: URL(filePath: base("XDG_CACHE_HOME", default: ".cache"), directoryHint: .isDirectory)
                .appending(path: identifier, directoryHint: .isDirectory),
            .preferences: URL(filePath: base("XDG_CONFIG_HOME", default: ".config"), directoryHint: .isDirectory)
                .appending(path: identifier, directoryHint: .isDirectory),
            // /tmp is shared by every user: a per-user name, created 0700 and checked for its owner.
            .temporary: URL(filePath: temporaryBase, directoryHint: .isDirectory)
                .appending(path: "\(identifier)-\(getuid())", directoryHint: .isDirectory),
        ]
    }

    /// `$HOME` when it is an absolute path, else the user database's home for the real user.
    static func homeDirectory(environment: [String: String]) throws -> String {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        if getpwuid_r(getuid(), &record, &buffer, buffer.count, &result) == 0, result != nil,
            let directory = record.pw_dir, directory[0] == 0x2F
        {
            return String(cString: directory)
        }
        throw StowageError(
            code: .notFound,
            message: "cannot find the home directory: HOME is unset or not absolute and the user database has no "
                + "entry for uid \(getuid()); set HOME, the XDG_* variables, or use a rooted container (--root)"
        )
    }

    #if canImport(Darwin)
    /// FileManager's search paths; shared directories (a non-sandboxed Mac app's) get the
    /// identifier appended.
    static func appleURLs(identifier: String) throws -> [Location: URL] {
        let manager = FileManager.default
        func directory(_ kind: FileManager.SearchPathDirectory) throws -> URL {
            guard let url = manager.urls(for: kind, in: .userDomainMask).first else {
                throw StowageError(code: .notFound, message: "the system reports no \(kind) directory for this user")
            }
            return url
        }
        #if os(macOS)
        // A sandboxed Mac app's search paths are already inside its own container
        // (~/Library/Containers/<id>/Data/…, and the sandbox sets APP_SANDBOX_CONTAINER_ID);
        // a non-sandboxed one shares ~/Library with every other app, so it gets its own folder.
        let isSandboxed = ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil
        #else
        // iOS, tvOS, watchOS and visionOS: every app runs in its own sandbox container, so its
        // Documents, Library/Application Support, Library/Caches and tmp are its own already.
        let isSandboxed = true
        #endif
        func own(_ url: URL) -> URL { isSandboxed ? url : url.appending(path: identifier, directoryHint: .isDirectory) }
        let library = try directory(.libraryDirectory)
        return [
            .documents: own(try directory(.documentDirectory)),
            .applicationSupport: own(try directory(.applicationSupportDirectory)),
            .caches: own(try directory(.cachesDirectory)),
            .preferences: own(library.appending(path: "Preferences", directoryHint: .isDirectory)),
            .temporary: own(manager.temporaryDirectory),
        ]
    }
    #endif
}
