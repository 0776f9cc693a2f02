import Foundation
import Logging
import Metrics
import StowageCache
import StowageCore
import Synchronization

/// Takes the ``StorageAccount`` of a container: every store Stowage manages in it.
///
/// ```swift
/// let accountant = StorageAccountant(container: container)
/// accountant.register(thumbnails, name: "thumbnails")        // memory caches live in this process
/// let account = try await accountant.account()
/// for store in account.stores { print(store.name, store.category, store.allocatedBytes) }
/// ```
///
/// Found on disk without registration: disk caches (any directory in caches with a disk-cache
/// index, read from the index), other files in caches, purgeable directories (from their
/// registry), preference suites, the secret store, user databases, and temporary files. Memory
/// caches and archives are registered, since only the app knows them.
///
/// Each account also sets swift-metrics gauges, per store (dimensions `store`, `kind`,
/// `category`): `stowage_store_logical_bytes`, `stowage_store_allocated_bytes`,
/// `stowage_store_entries`, `stowage_store_expired_bytes`.
public final class StorageAccountant: Sendable {
    /// The container accounted for.
    public let container: Container
    private let registered = Mutex<[String: @Sendable () async throws -> StorageAccount.Store]>([:])
    private let clock: CacheClock
    private let logger: Logger

    /// An accountant for `container`'s stores.
    ///
    /// - Parameters:
    ///   - container: The container whose locations and stores are accounted for.
    ///   - now: The clock that decides which cached entries have expired and gives
    ///     ``StorageAccount/date``.
    ///   - logger: Where stores that cannot be read are logged; silent by default.
    public init(
        container: Container,
        now: CacheClock = .system,
        logger: Logger = Logger(label: "org.stowage.account", factory: SwiftLogNoOpLogHandler.init)
    ) {
        self.container = container
        self.clock = now
        self.logger = logger
    }

    /// Includes `cache` (in this process's memory) as `name`; its cost is reported as bytes.
    public func register<Key: Hashable & Sendable, Value: Sendable>(_ cache: MemoryCache<Key, Value>, name: String) {
        register(name: "memory/\(name)") {
            StorageAccount.Store(
                name: "memory/\(name)",
                kind: .memoryCache,
                category: .regenerable,
                path: nil,
                logicalBytes: ByteCount(cache.totalCost),
                allocatedBytes: .zero,
                entries: cache.count,
                source: .memory
            )
        }
    }

    /// Includes the archive file at `url` as `name` (durable data).
    public func registerArchive(at url: URL, name: String) {
        register(name: "archive/\(name)") {
            let measured = try StoreFiles.measure([url.fileSystemPath])
            return StorageAccount.Store(
                name: "archive/\(name)",
                kind: .archive,
                category: .durable,
                path: url.fileSystemPath,
                logicalBytes: measured.logical,
                allocatedBytes: measured.allocated,
                entries: measured.files,
                source: .files
            )
        }
    }

    /// Includes any store with a figure of its own (`measure` runs at each account).
    public func register(name: String, measure: @escaping @Sendable () async throws -> StorageAccount.Store) {
        registered.withLock { $0[name] = measure }
    }

    /// Takes the account now.
    ///
    /// Stores that cannot be read are left out and named in ``StorageAccount/issues``.
    public func account() async throws -> StorageAccount {
        var stores: [StorageAccount.Store] = []
        var issues: [String] = []
        let found = try await BlockingWork.run {
            try StoreDiscovery(container: self.container, now: self.clock.now()).discover()
        }
        stores += found.stores
        issues += found.issues
        for (name, measure) in registered.withLock({ $0 }) {
            do {
                stores.append(try await measure())
            } catch {
                issues.append("\(name): \(error)")
            }
        }
        let order: [StorageAccount.Category] = [.durable, .regenerable, .temporary]
        stores.sort { lhs, rhs in
            let left = order.firstIndex(of: lhs.category)!
            let right = order.firstIndex(of: rhs.category)!
            return left != right ? left < right : lhs.name < rhs.name
        }
        for issue in issues { logger.warning("store not accounted", metadata: ["issue": "\(issue)"]) }
        Self.recordGauges(stores)
        return StorageAccount(container: container.identifier, date: clock.now(), stores: stores, issues: issues)
    }

    private static func recordGauges(_ stores: [StorageAccount.Store]) {
        for store in stores {
            let dimensions = [
                ("store", store.name), ("kind", store.kind.rawValue), ("category", store.category.rawValue),
            ]
            Gauge(label: "stowage_store_logical_bytes", dimensions: dimensions).record(store.logicalBytes.rawValue)
            Gauge(label: "stowage_store_allocated_bytes", dimensions: dimensions).record(store.allocatedBytes.rawValue)
            Gauge(label: "stowage_store_entries", dimensions: dimensions).record(store.entries ?? 0)
            Gauge(label: "stowage_store_expired_bytes", dimensions: dimensions).record(store.expiredBytes.rawValue)
        }
    }
}
