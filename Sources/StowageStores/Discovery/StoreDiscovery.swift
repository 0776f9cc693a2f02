import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping
import StowagePreferences

/// Finds and measures the stores a container holds on disk, each the cheapest way it allows.
struct StoreDiscovery {
    let container: Container
    /// The time expiry is judged at: the accountant's clock.
    let now: Date

    struct Found {
        var stores: [StorageAccount.Store] = []
        var issues: [String] = []
    }

    func discover() throws -> Found {
        var found = Found()
        let inventory = try CachesInventory(container: container)
        // A tree mounted in the caches location is another file system's: not a store of the
        // container, measured like du -x would not (named among the issues instead).
        for entry in inventory.entries where entry.isMounted {
            found.issues.append("\(entry.url.fileSystemPath): \(FileSystemBoundary.skipMessage)")
        }
        collect(into: &found) { try caches(inventory.entries.filter { !$0.isMounted }) }
        collect(into: &found) { try purgeableDirectories(inventory.purgeable) }
        collect(into: &found) { try preferenceSuites() }
        collect(into: &found) { try secrets() }
        collect(into: &found) { try cookies() }
        collect(into: &found) { try databases() }
        collect(into: &found) { try temporary() }
        return found
    }

    private func collect(into found: inout Found, _ body: () throws -> [StorageAccount.Store]) {
        do {
            found.stores += try body()
        } catch {
            found.issues.append("\(error)")
        }
    }

    /// Disk caches (HTTP caches among them) from their index; any other directory or file in
    /// caches by a walk.
    private func caches(_ entries: [CachesInventory.Entry]) throws -> [StorageAccount.Store] {
        try entries.map { entry in
            guard entry.kind != .loose, let summary = try DiskCache.summary(ofDirectory: entry.url, now: now) else {
                return try walked(entry.url, name: "caches/\(entry.name)", kind: .cacheFiles, category: .regenerable)
            }
            return StorageAccount.Store(
                name: "caches/\(entry.name)",
                kind: entry.kind == .httpCache ? .httpCache : .diskCache,
                category: .regenerable,
                path: entry.url.fileSystemPath,
                logicalBytes: summary.logicalBytes,
                allocatedBytes: summary.allocatedBytes,
                entries: summary.count,
                expiredBytes: summary.expiredBytes,
                source: .index
            )
        }
    }

    private func purgeableDirectories(
        _ registrations: [(registration: PurgeableDirectory, url: URL)]
    ) throws -> [StorageAccount.Store] {
        try registrations.filter { StoreFiles.isDirectory($0.url) }.map { registration, url in
            try walked(url, name: registration.path, kind: .purgeableDirectory, category: .regenerable)
        }
    }

    /// Each suite's file, and its number of keys.
    private func preferenceSuites() throws -> [StorageAccount.Store] {
        let directory = container.url(for: .preferences)
        return try StoreFiles.names(in: directory).filter { $0.hasSuffix(".stowprefs") }.map { name in
            let url = directory.appending(path: name)
            let measured = try StoreFiles.measure([url.fileSystemPath])
            let suite = try Preferences.open(at: url)
            return StorageAccount.Store(
                name: "preferences/\(name.dropLast(".stowprefs".count))",
                kind: .preferences,
                category: .durable,
                path: url.fileSystemPath,
                logicalBytes: measured.logical,
                allocatedBytes: measured.allocated,
                entries: suite.dictionaryRepresentation().count,
                source: .files
            )
        }
    }

    /// The secret store: its header, its items and its key file.
    private func secrets() throws -> [StorageAccount.Store] {
        let directory = container.url(for: .applicationSupport).appending(path: "secrets")
        let items = directory.appending(path: "items")
        guard StoreFiles.isDirectory(directory) else { return [] }
        let itemPaths = try StoreFiles.names(in: items).map { items.appending(path: $0).fileSystemPath }
        let key = container.url(for: .preferences).appending(path: "keys/secrets.key").fileSystemPath
        let measured = try StoreFiles.measure(
            itemPaths + [directory.appending(path: "store.json").fileSystemPath, key]
        )
        return [
            StorageAccount.Store(
                name: "secrets",
                kind: .secrets,
                category: .durable,
                path: directory.fileSystemPath,
                logicalBytes: measured.logical,
                allocatedBytes: measured.allocated,
                entries: try StoreFiles.measure(itemPaths).files,
                source: .files
            )
        ]
    }

    /// Each user's cookie file (`UserSpace/cookies(configuration:)`): durable, since cookies
    /// cannot be fetched again; entries are its records, one per persistent cookie.
    private func cookies() throws -> [StorageAccount.Store] {
        let users = container.url(for: .applicationSupport).appending(path: "users")
        return try StoreFiles.names(in: users).filter { !$0.hasPrefix(".") }.compactMap { user in
            let file = UserSpace.cookiesFile(of: user, in: container)
            guard FileManager.default.fileExists(atPath: file.fileSystemPath) else { return nil }
            let measured = try StoreFiles.measure([file.fileSystemPath])
            let lines = try Data(contentsOf: file).reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            return StorageAccount.Store(
                name: "cookies \(user)",
                kind: .cookies,
                category: .durable,
                path: file.fileSystemPath,
                logicalBytes: measured.logical,
                allocatedBytes: measured.allocated,
                entries: max(lines - 1, 0),
                source: .files
            )
        }
    }

    /// Each user's database with its WAL and shared-memory files.
    private func databases() throws -> [StorageAccount.Store] {
        let directory = container.url(for: .applicationSupport).appending(path: "databases")
        return try StoreFiles.names(in: directory).filter { !$0.hasPrefix(".") }.compactMap { user in
            let userDirectory = directory.appending(path: user)
            guard StoreFiles.isDirectory(userDirectory) else { return nil }
            let files = try StoreFiles.names(in: userDirectory).filter { $0.contains(".sqlite") }
            let measured = try StoreFiles.measure(files.map { userDirectory.appending(path: $0).fileSystemPath })
            return StorageAccount.Store(
                name: "database \(user)",
                kind: .database,
                category: .durable,
                path: userDirectory.fileSystemPath,
                logicalBytes: measured.logical,
                allocatedBytes: measured.allocated,
                entries: nil,
                source: .files
            )
        }
    }

    private func temporary() throws -> [StorageAccount.Store] {
        let url = container.url(for: .temporary)
        guard StoreFiles.isDirectory(url) else { return [] }
        return [try walked(url, name: "temporary", kind: .temporary, category: .temporary)]
    }

    private func walked(
        _ url: URL,
        name: String,
        kind: StorageAccount.Kind,
        category: StorageAccount.Category
    ) throws -> StorageAccount.Store {
        // Like du -x: a mount inside is another file system's, which no clear of the store frees.
        let usage = try DiskUsage.measure(url, options: .init(staysOnFileSystem: true))
        return StorageAccount.Store(
            name: name,
            kind: kind,
            category: category,
            path: url.fileSystemPath,
            logicalBytes: usage.logicalBytes,
            allocatedBytes: usage.allocatedBytes,
            entries: usage.fileCount,
            source: .walk
        )
    }
}
