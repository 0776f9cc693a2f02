import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The registrations on disk: `Library/Application Support/Stowage/purgeable-directories.json`
/// in the container (application support: kept, backed up, never purged).
///
/// Writes go through ``AtomicFile`` (temporary file, fsync, rename), so a reader sees the old
/// list or the new one. A change reads, modifies and writes under an exclusive `flock` on a
/// sibling lock file, so an app and the `stowage` tool registering at once lose nothing.
struct PurgeableRegistryFile: Sendable {
    let container: Container

    private struct Contents: Codable {
        var version = 1
        var directories: [PurgeableDirectory] = []
    }

    var url: URL {
        container.url(for: .applicationSupport).appending(path: "Stowage/purgeable-directories.json")
    }

    /// The registrations, empty when nothing was ever registered.
    ///
    /// - Throws: `StowageError` `.corrupt` naming the file when it cannot be decoded.
    func read() throws -> [PurgeableDirectory] {
        let path = url.fileSystemPath
        if FileStatus.of(path) == nil {
            guard errno == ENOENT else { throw StowageError.syscall(.current, "examine", path: path) }
            return []
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw StowageError(code: .ioError, message: "cannot read '\(path)': \(error)", path: path)
        }
        do {
            let contents = try JSONDecoder().decode(Contents.self, from: data)
            guard contents.version == 1 else {
                throw StowageError(
                    code: .unsupported,
                    message: "'\(path)' has version \(contents.version), newer than this Stowage reads (1); "
                        + "upgrade Stowage",
                    path: path
                )
            }
            return contents.directories
        } catch let error as StowageError {
            throw error
        } catch {
            throw StowageError(
                code: .corrupt,
                message: "the purgeable-directory registry '\(path)' cannot be read (\(error)); "
                    + "fix or delete it and register the directories again",
                path: path,
                cause: error
            )
        }
    }

    /// Reads, changes and writes the registrations atomically with respect to other writers.
    @discardableResult
    func update<T>(_ change: (inout [PurgeableDirectory]) throws -> T) throws -> T {
        let directory = try container.directory(for: .applicationSupport).appending(path: "Stowage")
        try DirectoryCreation.createDirectory(at: directory)
        let lock = try LockFile(path: directory.appending(path: "purgeable-directories.lock").fileSystemPath)
        try lock.lock(.exclusive)
        var directories = try read()
        let before = directories
        let result = try change(&directories)
        if directories != before {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(Contents(directories: directories))
            try AtomicFile.write(Array(data), to: url)
        }
        return result
    }
}
