import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore
import Synchronization

/// An HTTP response cache that follows RFC 9111, with the request policies and hooks of
/// `URLCache` (seeds 001 and 004), on a `DiskCache` with a `MemoryCache` in front.
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
    /// The disk tier.
    public let disk: DiskCache
    let memory: MemoryCache<String, MemoryEntry>
    let collapser: RequestCollapser
    /// Reachability of the shared level (logged once per outage, failures counted).
    let sharedHealth: SharedTierHealth
    /// Other nodes' invalidations, applied while the cache runs; `nil` without a shared level.
    let invalidations: InvalidationFeed?
    /// Memory in front of disk: reads, writes, removals and invalidations go through it, in the
    /// order that keeps memory from outliving disk (and from a clear of the disk cache).
    let levels: CacheLevels<MemoryEntry>
    let revalidations: RequestCollapser
    /// Requests per key, for ``Configuration/minimumUses``.
    let uses: UseCounter
    /// Records on disk stored before it are confirmed against the shared level before use.
    let horizon: InvalidationHorizon

    /// What the memory tier holds: the variant records of a URL, or one body.
    enum MemoryEntry: Sendable {
        case variants([VariantRecord])
        case body([UInt8])
    }

    /// Opens (or creates) the cache in `directory`.
    ///
    /// - Throws: ``HTTPCacheError`` `.invalidConfiguration`, or `StowageError` when the
    ///   directory or its index cannot be opened.
    public init(directory: URL, configuration: Configuration = Configuration()) throws {
        _ = try directory.checkedFileSystemPath(subject: "the HTTP cache directory")
        try configuration.validate()
        self.configuration = configuration
        rules = configuration.rules
        var diskConfiguration = DiskCache.Configuration(name: configuration.name)
        diskConfiguration.sizeLimit = configuration.diskCapacity
        diskConfiguration.clock = configuration.clock
        diskConfiguration.logger = configuration.logger
        disk = try DiskCache(directory: directory, configuration: diskConfiguration)
        try Self.checkLayout(in: directory)
        var memoryConfiguration = MemoryCache<String, MemoryEntry>.Configuration(
            name: configuration.name,
            costLimit: max(1, Int(configuration.memoryCapacity.rawValue))
        )
        memoryConfiguration.clock = configuration.clock
        memory = try MemoryCache(configuration: memoryConfiguration)
        levels = CacheLevels(memory: memory, disk: disk, logger: configuration.logger)
        sharedHealth = SharedTierHealth(name: configuration.name, logger: configuration.logger)
        horizon = InvalidationHorizon(clock: configuration.clock)
        collapser = RequestCollapser(clock: configuration.waitClock)
        uses = UseCounter()
        revalidations = RequestCollapser(clock: configuration.waitClock)
        invalidations = configuration.sharedTier.map(InvalidationFeed.init(shared:))
    }

    /// Opens the cache without blocking Swift's cooperative threads.
    public static func open(directory: URL, configuration: Configuration = Configuration()) async throws -> HTTPCache {
        try await BlockingWork.run { try HTTPCache(directory: directory, configuration: configuration) }
    }

    /// Seconds since 1970, from the configured clock.
    var now: Double { configuration.clock.now().timeIntervalSince1970 }

    /// The largest body kept in memory.
    var memoryBodyLimit: Int64 {
        Int64(Double(configuration.memoryCapacity.rawValue) * configuration.maximumEntryFraction)
    }
    /// The largest body stored at all.
    var diskBodyLimit: Int64 {
        let byFraction = Int64(Double(configuration.diskCapacity.rawValue) * configuration.maximumEntryFraction)
        return configuration.maximumBodySize.map { min($0.rawValue, byFraction) } ?? byFraction
    }

    /// Removes every stored response.
    ///
    /// Every other handle of the cache's directory, in this process or another, drops its memory
    /// tier before its next read.
    public func removeAll() async throws {
        try await levels.removeAll()
    }

    /// Removes the stored responses (all variants) of `request`'s URI.
    public func removeResponses(for request: HTTPRequest) async throws {
        try await remove(rules.key(for: request))
    }

    /// Bytes and entries on disk (bodies and records).
    public func diskUsage() async throws -> (count: Int, size: ByteCount) { try await disk.usage() }

    /// Bytes held by the memory tier.
    public var memoryUsage: ByteCount { ByteCount(memory.totalCost) }

    /// Hits, misses, writes, evictions and bytes of each tier since the cache was opened (as
    /// `URLCache` users read `currentMemoryUsage`); the same figures go to swift-metrics with
    /// the dimensions `cache` (``Configuration/name``) and `tier`.
    public var statistics: Statistics {
        Statistics(memory: memory.statistics, disk: disk.statistics)
    }

    /// The counters of the HTTP cache's tiers. Records (the variants of a URL) and bodies are
    /// both entries: a response served from memory counts two memory hits, one from disk a
    /// memory miss and a disk hit for each.
    public struct Statistics: Sendable, Hashable {
        /// The memory tier's counters.
        public var memory: CacheStatistics
        /// The disk tier's counters.
        public var disk: CacheStatistics

        /// Bytes of responses read from either tier.
        public var bytesRead: Int64 { memory.bytesRead + disk.bytesRead }
    }
}
