import Foundation
import StowageCache
import StowageCore
import StowageHTTPCache
import StowagePreferences

/// Finds and measures the stores a container holds on disk, each the cheapest way it allows.
struct StoreDiscovery {
    let container: Container
    var now = Date()

    struct Found {
        var stores: [StorageAccount.Store] = []
        var issues: [String] = []
    }

    func discover() throws -> Found {
        var found = Found()
        let directories = PurgeableDirectories(container: container)
        let purgeable = try directories.registrationsBlocking().map { ($0, try directories.url(for: $0.path)) }
        let purgeablePaths = Set(purgeable.map { $0.1.fileSystemPath })
        collect(into: &found) { try caches(excluding: purgeablePaths) }
        collect(into: &found) { try purgeableDirectories(purgeable) }
        collect(into: &found) { try preferenceSuites() }
        collect(into: &found) { try secrets() }
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
    private func caches(excluding purgeable: Set<String>) throws -> [StorageAccount.Store] {
        let caches = container.url(for: .caches)
        var stores: [StorageAccount.Store] = []
        for name in try StoreFiles.names(in: caches) {
            let url = caches.appending(path: name)
            guard !purgeable.contains(url.fileSystemPath) else { continue }
            if StoreFiles.isDirectory(url), let summary = try DiskCache.summary(ofDirectory: url, now: now) {
                let isHTTPCache = FileManager.default.fileExists(atPath: url.appending(path: HTTPCache.layoutFileName).path)
                stores.append(
                    StorageAccount.Store(
                        name: "caches/\(name)",
                        kind: isHTTPCache ? .httpCache : .diskCache,
                        category: .regenerable,
                        path: url.fileSystemPath,
                        logicalBytes: summary.logicalBytes,
                        allocatedBytes: summary.allocatedBytes,
                        entries: summary.count,
                        expiredBytes: summary.expiredBytes,
                        source: .index
                    )
                )
            } else if name != "CACHEDIR.TAG" {
                stores.append(try walked(url, name: "caches/\(name)", kind: .cacheFiles, category: .regenerable))
            }
        }
        return stores
    }

    private func purgeableDirectories(_ registrations: [(PurgeableDirectory, URL)]) throws -> [StorageAccount.Store] {
        try registrations.filter { StoreFiles.isDirectory($0.1) }.map { registration, url in
            try walked(url, name: registration.path, kind: .purgeableDirectory, category: .regenerable)
        }
    }

    /// Each suite's file, and its number of keys.
    private func preferenceSuites() throws -> [StorageAccount.Store] {
        let directory = container.url(for: .preferences)
        return try StoreFiles.names(in: directory).filter { $0.hasSuffix(".stowprefs") }.map { name in
            let url = directory.appending(path: name)
            let measured = try StoreFiles.measure([url.fileSystemPath])
            let suite = try Preferences.openBlocking(at: url)
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
        let measured = try StoreFiles.measure(itemPaths + [directory.appending(path: "store.json").fileSystemPath, key])
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
        let usage = try DiskUsage.measureBlocking(url)
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
