import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore
import Synchronization

/// An HTTP response cache that follows RFC 9111, with the request policies and hooks of
/// `URLCache`, on a `DiskCache` with a `MemoryCache` in front.
///
/// Like `URLCache`, it has three modes, chosen by its directory and capacities (``mode``):
/// memory and disk; memory only (no directory, or `diskCapacity` 0, as
/// `URLCache(memoryCapacity:diskCapacity: 0, directory: nil)`); and disabled (both capacities 0,
/// as `URLCache(memoryCapacity: 0, diskCapacity: 0)`, where every request goes to the origin).
/// ``shared`` is a process-wide memory-only cache that clients use when given none.
///
/// ```swift
/// let cache = try await HTTPCache.open(directory: caches.appending(path: "http"))
/// let served = try await cache.respond(to: request, policy: .useProtocolCachePolicy) { request, body in
///     try await origin.send(request, body)        // your transport: AsyncHTTPClient, a test origin
/// }
/// served.outcome        // .hit, .miss, .revalidated, .stale
/// ```
///
/// The decisions are ``CacheRules`` (pure functions); this type stores and loads responses and
/// runs the exchange: conditional requests, 304 freshening, `Vary` variants, invalidation,
/// `stale-while-revalidate` and `stale-if-error`, request collapsing. `StowageHTTPClient`
/// and `StowageProxy` are thin layers on ``respond(to:body:policy:fetch:)``.
public final class HTTPCache: Sendable {
    /// The configuration the cache was opened with.
    public let configuration: Configuration
    /// The RFC 9111 rules in force.
    public let rules: CacheRules
    /// The disk tier; `nil` when the cache keeps responses in memory only or is disabled
    /// (``mode``): no `DiskCache` is created then, and nothing is written to the file system.
    public let disk: DiskCache?
    /// Where responses are kept: memory and disk, memory only, or nowhere.
    public let mode: Mode
    let memory: MemoryCache<String, MemoryEntry>
    let collapser: RequestCollapser
    /// Memory in front of disk in front of the shared level: reads, writes, removals and
    /// invalidations go through it, in the order that keeps memory from outliving disk (and from
    /// a clear of the disk cache), and it keeps the shared level's outage replay and horizon.
    let levels: CacheLevels<MemoryEntry>
    let revalidations: RequestCollapser
    /// Requests per key, for ``Configuration/minimumUses``.
    let uses: UseCounter
    /// URLs whose last response could not be stored: not collapsed for a while.
    let uncacheableURLs = UncacheableURLs()
    /// Invalidations in the order fetches see them: a response fetched before one that covers
    /// it is not stored after it.
    let invalidations = InvalidationOrder()
    /// A cache in memory only, in the process's registry of open stores while it is open, so
    /// that "clear caches" (`ClearCaches`) reaches it: no directory names it. `nil` for the other
    /// modes (a disk cache's clear reaches its memory tier through its generation file).
    let openStore: OpenStores.Registration?
    /// The file a server's answers worked out from disk reads are spilled to (``answerSpill``).
    let answerSpills = AnswerSpillSlot()
    /// Whether memory evicts for its capacity lately: answers it holds in full are spilled then.
    let memoryEvictions = MemoryEvictionWatch()
    /// Look-ups of spilled answers' records that time called for, off the event loop.
    let spilledRechecks = SpilledAnswerRechecks()

    /// What the memory tier holds: the variant records of a URL, one body, or an answer a
    /// server prepared from them (``answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``),
    /// charged to `memoryCapacity` as the others are.
    enum MemoryEntry: Sendable {
        case variants([VariantRecord])
        case body([UInt8])
        case prepared(PreparedAnswer)
        /// Where a server's answer worked out from a disk read is in ``HTTPCache/answerSpill``.
        case spilled(SpilledAnswer)
    }

    /// Where an ``HTTPCache`` keeps responses, as `URLCache`'s capacities and directory decide it.
    public enum Mode: String, Sendable, Hashable, CustomStringConvertible {
        /// Memory in front of a disk cache in the directory.
        case memoryAndDisk
        /// Memory only: no directory, or a `diskCapacity` of 0 (`URLCache(memoryCapacity:
        /// diskCapacity: 0, directory: nil)`, and ``HTTPCache/shared``). Responses last while the
        /// process runs and the memory tier keeps them; no file is created.
        case memoryOnly
        /// Nothing is stored: `memoryCapacity` 0 and no disk tier, as `URLCache(memoryCapacity: 0,
        /// diskCapacity: 0)` turns `URLCache` off. Every request goes to the origin (no
        /// request collapsing either); no file is created.
        case disabled

        /// The mode `configuration`'s capacities and `directory` give.
        public init(directory: URL?, configuration: Configuration) {
            let hasDisk = directory != nil && configuration.diskCapacity.rawValue > 0
            if hasDisk {
                self = .memoryAndDisk
            } else {
                self = configuration.memoryCapacity.rawValue > 0 ? .memoryOnly : .disabled
            }
        }

        /// The text logs and messages show.
        public var description: String { rawValue }
    }

    /// Opens (or creates) the cache in `directory`, or one in memory only.
    ///
    /// The ``mode`` follows `URLCache(memoryCapacity:diskCapacity:directory:)`:
    /// - a directory and a `diskCapacity` above 0: memory and disk (the directory is created);
    /// - no directory (`nil`), or a `diskCapacity` of 0: memory only; the directory, if given,
    ///   is not touched and `diskCapacity` is not used;
    /// - and a `memoryCapacity` of 0 as well: disabled, every request goes to the origin.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` (a negative capacity, a shared level
    ///   without a disk tier, …), or another `StowageError` when the directory or its index cannot be
    ///   opened.
    public init(directory: URL?, configuration: Configuration = Configuration()) throws {
        _ = try directory?.checkedFileSystemPath(subject: "the HTTP cache directory")
        try configuration.validate()
        let mode = Mode(directory: directory, configuration: configuration)
        if mode != .memoryAndDisk, configuration.sharedTier != nil {
            throw StowageError(
                code: .invalidConfiguration,
                message: "a sharedTier needs a disk tier: give a directory and a diskCapacity above 0 "
                    + "(this cache is \(mode == .disabled ? "disabled" : "in memory only"))"
            )
        }
        self.mode = mode
        self.configuration = configuration
        rules = configuration.rules
        if mode == .memoryAndDisk, let directory {
            var diskConfiguration = DiskCache.Configuration(name: configuration.name)
            diskConfiguration.sizeLimit = configuration.diskCapacity
            diskConfiguration.clock = configuration.clock
            diskConfiguration.logger = configuration.logger
            // The memory level answers most reads, so the index is mostly written: the writer's
            // page cache filled SQLite's default 2 MiB under the proxy's miss-then-hit load
            // (heaptrack: 1.87 MB of pages from sqlite3BtreeInsert, 2.72 MB of SQLite heap in
            // all); at 256 KiB a connection, 0.88 MB (`sqlite3_memory_used`, 2026-11-29).
            diskConfiguration.indexPageCacheSize = Self.indexPageCacheSize
            diskConfiguration.accessTimeResolution = Self.diskAccessTimeResolution
            let disk = try DiskCache(directory: directory, configuration: diskConfiguration)
            try Self.checkLayout(in: directory)
            self.disk = disk
        } else {
            disk = nil
        }
        var memoryConfiguration = MemoryCache<String, MemoryEntry>.Configuration(
            name: configuration.name,
            costLimit: max(1, Int(configuration.memoryCapacity.rawValue))
        )
        memoryConfiguration.clock = configuration.clock
        memory = try MemoryCache(configuration: memoryConfiguration)
        levels = CacheLevels(
            memory: memory,
            disk: disk,
            shared: Self.sharedLevel(configuration),
            logger: configuration.logger,
            tracer: configuration.tracer
        )
        collapser = RequestCollapser(clock: configuration.waitClock)
        uses = UseCounter()
        revalidations = RequestCollapser(clock: configuration.waitClock)
        openStore =
            mode == .memoryOnly ? OpenStores.process.register("HTTPCache '\(configuration.name)' (memory only)") : nil
        openStore?.whenCleared { [weak self] in try await self?.removeAll() }

        // A removal or invalidation through another handle (another process on the directory)
        // is final here too: fetches under way then store nothing.
        levels.whenOthersRemove { [invalidations] in invalidations.noteRemovedElsewhere() }
        // The spilled answers' places went with memory; their bytes go too, and the look-ups
        // waiting for them (keys of what was cleared).
        levels.whenStoreEmptiesMemory { [answerSpills, spilledRechecks] in
            answerSpills.ifOpen?.removeAll()
            spilledRechecks.removeAllPending()
        }
    }

    /// Opens the cache without blocking Swift's cooperative threads.
    public static func open(directory: URL?, configuration: Configuration = Configuration()) async throws -> HTTPCache {
        try await BlockingWork.run { try HTTPCache(directory: directory, configuration: configuration) }
    }

    /// Seconds since 1970, from the configured clock.
    var now: Double { configuration.clock.now().timeIntervalSince1970 }

    /// The largest body kept in memory.
    var memoryBodyLimit: Int64 { entryLimit(configuration.memoryCapacity) }
    /// The largest body stored at all.
    var diskBodyLimit: Int64 {
        let byFraction = entryLimit(configuration.diskCapacity)
        return configuration.maximumBodySize.map { min($0.rawValue, byFraction) } ?? byFraction
    }

    /// `capacity × maximumEntryFraction` in bytes. A capacity near `Int64.max` rounds up past it
    /// as a `Double` (2^63), which `Int64(_:)` would trap on: such limits are `Int64.max`.
    private func entryLimit(_ capacity: ByteCount) -> Int64 {
        let bytes = Double(capacity.rawValue) * configuration.maximumEntryFraction
        return bytes < Double(Int64.max) ? Int64(bytes) : .max
    }

    /// Removes every stored response.
    ///
    /// Every other handle of the cache's directory, in this process or another, drops its memory
    /// tier before its next read. The shared level (``Configuration/sharedTier``) is left alone,
    /// as `HybridCache.removeAll()` leaves it: other nodes keep serving what they share. To drop
    /// responses everywhere, use ``invalidate(urlPrefix:)`` or ``invalidate(tag:)``, which reach every node.
    ///
    /// - Returns: The disk tier's report (`DiskCache.removeAll()`): a mount point inside the
    ///   cache's directory keeps its files and is named among its failures
    ///   (`ClearReport.Failure.isOtherFileSystem`). Without a disk tier, an empty report whose
    ///   path is empty.
    @discardableResult
    public func removeAll() async throws -> ClearReport {
        await invalidations.begin(.all)
        defer {
            answerSpills.ifOpen?.removeAll()
            spilledRechecks.removeAllPending()
        }
        return try await levels.removeAll()
    }

    /// Removes the stored responses (all variants) of `request`'s URI.
    public func removeResponses(for request: HTTPRequest) async throws {
        let key = rules.key(for: request)
        await invalidations.begin(.uri(key.uri))
        try await remove(key)
    }

    /// Bytes and entries on disk (bodies and records); none without a disk tier.
    public func diskUsage() async throws -> (count: Int, size: ByteCount) {
        try await disk?.usage() ?? (0, ByteCount(0))
    }

    /// Bytes held by the memory tier.
    public var memoryUsage: ByteCount { ByteCount(memory.totalCost) }

    /// Hits, misses, writes, evictions and bytes of each tier since the cache was opened (as
    /// `URLCache` users read `currentMemoryUsage`); the same figures go to swift-metrics with
    /// the dimensions `cache` (``Configuration/name``) and `tier`.
    public var statistics: Statistics {
        Statistics(memory: memory.statistics, disk: disk?.statistics ?? CacheStatistics())
    }

    /// The counters of the HTTP cache's tiers. Records (the variants of a URL) and bodies are
    /// both entries: a response served from memory counts two memory hits, one from disk a
    /// memory miss and a disk hit for each.
    public struct Statistics: Sendable, Hashable {
        /// The memory tier's counters.
        public var memory: CacheStatistics
        /// The disk tier's counters (all 0 without a disk tier).
        public var disk: CacheStatistics

        /// Bytes of responses read from either tier.
        public var bytesRead: Int64 { memory.bytesRead + disk.bytesRead }
    }
}

extension HTTPCache {
    /// The page cache each connection to the disk level's index keeps (SQLite's `cache_size`).
    package static let indexPageCacheSize = ByteCount(256 * 1_024)

    /// How precisely disk hits keep their access time (``DiskCache/Configuration/accessTimeResolution``):
    /// ten minutes, nginx's `proxy_cache_path … inactive=10m` default, the time within which its
    /// cache manager takes an entry for recently used. A proxy serving 10^5 URLs from disk spent a
    /// fifth of its CPU rewriting the index's access times at the disk cache's 60 s default (one
    /// `UPDATE` of the row and its `accessed` index for the record and another for the body, on
    /// the first hit of each minute); a trim that frees half the cap by least recent use does not
    /// need them finer than this (Varnish, for the same reason, moves an object on its LRU list
    /// at most once per `lru_interval`).
    package static let diskAccessTimeResolution = Duration.seconds(600)

    /// Requests waiting now for another request's fetch of the same URL (request collapsing),
    /// for tests that must know the followers wait before they let the leader go on.
    package var collapsedRequestCount: Int { collapser.waiterCount }
}
