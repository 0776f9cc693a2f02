import Foundation
import StowageCore

/// Every store Stowage manages in one container, with what each holds: the answer to "what is
/// taking space in my app, and what could go?".
///
/// Produced by ``StorageAccountant/account()``. Indexed stores (disk caches) are read from their
/// index, never walked; the others are measured from their few files, or walked where nothing
/// else knows their size (purgeable directories, loose files in caches, temporary).
public struct StorageAccount: Sendable, Hashable, Codable {
    /// What may happen to a store's data.
    public enum Category: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// The user's data: documents, preferences, secrets, databases, archives. Never cleared.
        case durable
        /// Caches: can be recomputed or downloaded again. Emptied by "clear caches".
        case regenerable
        /// Scratch files. Emptied first under storage pressure.
        case temporary

        /// The text logs and messages show.
        public var description: String { rawValue }
    }

    /// The kind of store.
    public enum Kind: String, Sendable, Hashable, Codable, CustomStringConvertible {
        case memoryCache = "memory cache"
        case diskCache = "disk cache"
        case httpCache = "HTTP cache"
        case cacheFiles = "cache files"
        case purgeableDirectory = "purgeable directory"
        case preferences
        case secrets
        case cookies
        case database
        case archive
        case temporary

        /// The text logs and messages show.
        public var description: String { rawValue }
    }

    /// How a store's figures were obtained.
    public enum Source: String, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The store's own index (no directory walk).
        case index
        /// The store's counters in this process.
        case memory
        /// `stat` of the store's few files.
        case files
        /// A walk of the store's directory.
        case walk

        /// The text logs and messages show.
        public var description: String { rawValue }
    }

    /// One store.
    public struct Store: Sendable, Hashable, Codable {
        /// A name that tells the store apart, e.g. `caches/thumbnails` or `database ada`.
        public var name: String
        /// What sort of store it is.
        public var kind: Kind
        /// What may happen to its data.
        public var category: Category
        /// Where it is on disk; `nil` for a memory cache.
        public var path: String?
        /// Bytes of data as written (file lengths, value sizes; memory caches: their cost).
        public var logicalBytes: ByteCount
        /// Bytes the file system gives it; zero for a memory cache.
        public var allocatedBytes: ByteCount
        /// Entries: cached values, preference keys, secret items, files; `nil` where the store
        /// has no natural count (a database's rows are the app's business).
        public var entries: Int?
        /// Bytes of entries that have expired but are not removed yet (indexed stores only).
        public var expiredBytes: ByteCount
        /// How its figures were obtained.
        public var source: Source

        /// A store's account; see each property.
        public init(
            name: String,
            kind: Kind,
            category: Category,
            path: String?,
            logicalBytes: ByteCount,
            allocatedBytes: ByteCount,
            entries: Int?,
            expiredBytes: ByteCount = .zero,
            source: Source
        ) {
            self.name = name
            self.kind = kind
            self.category = category
            self.path = path
            self.logicalBytes = logicalBytes
            self.allocatedBytes = allocatedBytes
            self.entries = entries
            self.expiredBytes = expiredBytes
            self.source = source
        }
    }

    /// Sums over stores.
    public struct Totals: Sendable, Hashable, Codable {
        /// Bytes of content, summed.
        public var logicalBytes = ByteCount.zero
        /// Bytes the file system allocates, summed.
        public var allocatedBytes = ByteCount.zero
        /// Entries of the stores that count them.
        public var entries = 0
        /// Bytes of expired entries not removed yet.
        public var expiredBytes = ByteCount.zero
        /// Stores summed.
        public var stores = 0

        mutating func add(_ store: Store) {
            logicalBytes = logicalBytes + store.logicalBytes
            allocatedBytes = allocatedBytes + store.allocatedBytes
            entries += store.entries ?? 0
            expiredBytes = expiredBytes + store.expiredBytes
            stores += 1
        }
    }

    /// The container's identifier.
    public var container: String
    /// When the account was taken.
    public var date: Date
    /// Every store, durable first, then regenerable, then temporary; by name within each.
    public var stores: [Store]
    /// Problems met on the way (a store that could not be read); the others are still counted.
    public var issues: [String]

    /// The sums of one category.
    public func totals(for category: Category) -> Totals {
        var totals = Totals()
        for store in stores where store.category == category { totals.add(store) }
        return totals
    }

    /// The sums over every store.
    public var totals: Totals {
        var totals = Totals()
        for store in stores { totals.add(store) }
        return totals
    }
}
