import Foundation
import StowageCache
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The intent of each wipe in progress: `application support/Stowage/wipes/USER.json`, written
/// (atomically, synced) before anything of the user is touched and removed after the last of it
/// is gone. A journal left behind is a wipe to finish.
struct WipeJournal {
    let container: Container
    /// Dates the journal's `started`.
    var clock: CacheClock = .system

    private struct Entry: Codable {
        var format = 1
        var user: String
        var started: Date
    }

    var directory: URL {
        container.url(for: .applicationSupport).appending(path: "Stowage/wipes", directoryHint: .isDirectory)
    }

    func begin(_ user: String) throws {
        try DirectoryCreation.createDirectory(at: directory)
        let data = try JSONEncoder().encode(Entry(user: user, started: clock.now()))
        try AtomicFile.write([UInt8](data), to: directory.appending(path: user + ".json"))
    }

    func end(_ user: String) throws {
        let path = directory.appending(path: user + ".json").fileSystemPath
        guard FileNames.remove(path) || errno == ENOENT else {
            throw StowageError.syscall(.current, "remove the wipe journal", path: path)
        }
    }

    /// The users whose wipe is unfinished.
    ///
    /// - Throws: `StowageError` `.unsupported` for a journal of a newer format (never guessed
    ///   at: it could name another layout), `.corrupt` for one that does not decode.
    func pending() throws -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.fileSystemPath)) ?? []
        return try names.filter { $0.hasSuffix(".json") }.sorted().map { name in
            let url = directory.appending(path: name)
            let entry: Entry
            do {
                entry = try JSONDecoder().decode(Entry.self, from: Data(contentsOf: url))
            } catch {
                throw StowageError(
                    code: .corrupt,
                    message: "the wipe journal \(url.fileSystemPath) cannot be read (\(error)); wipe the user "
                        + "\(name.dropLast(5)) again to finish it, or delete the journal",
                    path: url.fileSystemPath
                )
            }
            guard entry.format <= 1 else {
                throw StowageError(
                    code: .unsupported,
                    message: "the wipe journal \(url.fileSystemPath) has format \(entry.format), newer than this "
                        + "Stowage's 1; finish the wipe with the newer version",
                    path: url.fileSystemPath
                )
            }
            try UserIdentifier.validate(entry.user)
            return entry.user
        }
    }
}
