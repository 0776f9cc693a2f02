import Foundation

/// A fresh directory under the system's temporary directory, removed when the value goes away.
public final class TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL
    /// The directory's path, without a trailing slash.
    public var path: String {
        let path = url.path(percentEncoded: false)
        return path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
    }

    /// Creates `stowage-test-NAME-UUID` (the name defaults to the calling function's, letters
    /// and digits only).
    public init(_ name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appending(path: "stowage-test-\(safe)-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Removes the directory, again when a pass fails while the directory is still there: a
    /// cache released without `close()` may still be closing its SQLite connections, and the last
    /// one to close deletes the index's `-wal` and `-shm` files while the removal walks the
    /// directory; an entry gone between its listing and its removal failed the pass and left the
    /// rest behind (`DiskCacheDurabilityTests.concurrentWritersShareCommits`, once in a full run).
    deinit {
        for _ in 0..<5 {
            guard (try? FileManager.default.removeItem(at: url)) == nil else { return }
            guard FileManager.default.fileExists(atPath: path) else { return }
        }
    }

    /// Writes `bytes` copies of `byte` to `relative`, creating parent directories.
    @discardableResult
    public func write(_ relative: String, bytes: Int = 1, byte: UInt8 = 0x61) throws -> URL {
        let file = url.appending(path: relative)
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try Data(repeating: byte, count: bytes).write(to: file)
        return file
    }

    /// Creates `relative` and its missing parents.
    public func makeDirectory(_ relative: String) throws {
        try FileManager.default.createDirectory(at: url.appending(path: relative), withIntermediateDirectories: true)
    }

    /// Creates a symbolic link at `relative` whose target is `destination`, as given.
    public func symlink(_ relative: String, to destination: String) throws {
        try FileManager.default.createSymbolicLink(
            atPath: url.appending(path: relative).path,
            withDestinationPath: destination
        )
    }

    /// Whether anything (a link included, not followed) is at `relative`.
    public func exists(_ relative: String) -> Bool {
        // attributesOfItem examines the link itself, as lstat(2) does.
        (try? FileManager.default.attributesOfItem(atPath: url.appending(path: relative).path)) != nil
    }
}

/// Runs `body` with a fresh temporary directory, removed afterwards.
public func withTemporaryDirectory<T>(_ name: String = #function, _ body: (URL) throws -> T) throws -> T {
    let directory = try TemporaryDirectory(name)
    return try withExtendedLifetime(directory) { try body(directory.url) }
}

/// Runs `body` with a fresh temporary directory, removed afterwards.
public func withTemporaryDirectory<T>(
    _ name: String = #function,
    _ body: (URL) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory(name)
    let result = try await body(directory.url)
    withExtendedLifetime(directory) {}
    return result
}
