import Foundation
import Logging
import StowageCache
import StowageCore
import StowageHousekeeping

/// One "clear caches" for a whole container: everything regenerable goes, nothing durable is
/// touched.
///
/// ```swift
/// for try await event in try ClearCaches(container: container).run() {
///     progressView.show(event)                    // the cache cleaner's four phases
/// }
/// ```
///
/// What is emptied, in this order (the storage monitor's tiers): the temporary location; each
/// disk cache in the caches location, HTTP caches first, through its index (`DiskCache.removeAll()`, so processes
/// that have it open stay consistent, and the memory tiers of every `HybridCache` and HTTP cache
/// over it — a running `stowage proxy` included — drop what they hold before their next read);
/// the caches kept in memory only that are open in this process (an HTTP cache without a
/// directory, `HTTPCache.shared`); every other entry in the caches location; and each
/// registered purgeable directory. Documents (other than purgeable directories), application
/// support (preferences' and secrets' data, databases) and preferences are never touched.
///
/// The run is a `CacheCleaner` run over a manifest built from what is on disk, so it has the
/// same progress events, dry run, per-task bytes freed and failure isolation.
public struct ClearCaches: Sendable {
    /// The container cleared.
    public let container: Container
    /// Where the run is logged.
    public let logger: Logger
    /// The registry whose caches in memory only the run empties: the process's.
    let openStores: OpenStores

    /// Clears `container`'s regenerable stores; logs to `logger`.
    public init(
        container: Container,
        logger: Logger = Logger(label: "org.stowage.clear-caches", factory: SwiftLogNoOpLogHandler.init)
    ) {
        self.init(container: container, logger: logger, openStores: .process)
    }

    /// Clears `container`'s regenerable stores and the caches in memory only registered in
    /// `openStores`, instead of the process's (tests running beside others in one process).
    package init(
        container: Container,
        logger: Logger = Logger(label: "org.stowage.clear-caches", factory: SwiftLogNoOpLogHandler.init),
        openStores: OpenStores
    ) {
        self.container = container
        self.logger = logger
        self.openStores = openStores
    }

    /// The tasks a run would perform, in order, with the handlers they call.
    public func plan() throws -> (manifest: CleanManifest, handlers: CleanHandlers) {
        var tasks: [CleanTask] = []
        var handlers = CleanHandlers()
        if StoreFiles.isDirectory(container.url(for: .temporary)) { tasks.append(.path("tmp", entries: [])) }

        let inventory = try CachesInventory(container: container)
        let caches = container.url(for: .caches)
        // HTTP caches first (the storage monitor's tier order): the network has all of them.
        let diskCaches =
            inventory.entries.filter { $0.kind == .httpCache }.map(\.name)
            + inventory.entries.filter { $0.kind == .diskCache }.map(\.name)
        let looseEntries = inventory.entries.filter { $0.kind == .loose }.map(\.name)
        if !diskCaches.isEmpty {
            tasks.append(.handler(className: "DiskCache", selectors: diskCaches.map { "removeAll:" + $0 }))
            for name in diskCaches {
                let directory = caches.appending(path: name, directoryHint: .isDirectory)
                handlers.registerReporting(
                    className: "DiskCache",
                    selector: "removeAll:" + name,
                    measuring: ["Library/Caches/" + name]
                ) { [container] in
                    // Mounted over the cache's name since the plan classified it (the run measures
                    // every task first, which may take long): another file system's tree, never
                    // opened (an open collects its orphans) nor emptied; named, as the plan names
                    // a mount it sees (FileSystemBoundary).
                    if let boundary = try container.fileSystemBoundary(of: .caches),
                        !boundary.holdsDirectory(atPath: directory.fileSystemPath)
                    {
                        return [.init(path: directory.fileSystemPath, message: FileSystemBoundary.skipMessage)]
                    }
                    let cache = try await DiskCache.open(directory: directory, configuration: .init(name: name))
                    let report: ClearReport
                    do {
                        report = try await cache.removeAll()
                    } catch {
                        try? await cache.close()
                        throw error
                    }
                    try await cache.close()
                    // Mount points inside the cache's directory keep their files and are named.
                    return report.failures
                }
            }
        }
        // Caches in memory only (an HTTP cache without a directory, `HTTPCache.shared`): no
        // directory names them, so they are reached through the process's registry of open stores.
        // Always planned, so the plan does not depend on what else the process has open.
        tasks.append(.handler(className: "OpenStores", selectors: ["removeAll:memory"]))
        handlers.register(className: "OpenStores", selector: "removeAll:memory") { [openStores] in
            if let failure = await openStores.clearAll().first {
                throw StowageError(
                    code: .ioError,
                    message: "could not clear \(failure.name): \(failure.error)",
                    cause: failure.error
                )
            }
        }
        if !looseEntries.isEmpty { tasks.append(.path("Library/Caches", entries: looseEntries)) }
        for (registration, _) in inventory.purgeable { tasks.append(.path(registration.path, entries: [])) }
        return (CleanManifest(tasks: tasks), handlers)
    }

    /// Starts clearing and returns its progress (see `CacheCleaner/run(_:dryRun:)`).
    ///
    /// - Throws: `StowageError` when the plan cannot be made (an unreadable purgeable
    ///   registry); nothing has been removed then.
    public func run(dryRun: Bool = false) throws -> CleanProgress {
        let (manifest, handlers) = try plan()
        return CacheCleaner(container: container, handlers: handlers, logger: logger).run(manifest, dryRun: dryRun)
    }

    /// Clears and returns the report, without progress.
    public func clear(dryRun: Bool = false) async throws -> CleanReport {
        try await run(dryRun: dryRun).report()
    }
}
