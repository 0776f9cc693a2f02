import Foundation
import Logging
import StowageCore
import Synchronization
import Tracing

/// Memory in front of disk, optionally in front of a level shared by a fleet: typed values,
/// written through to every level, read from the nearest.
///
/// ```swift
/// let cache = HybridCache(
///     memory: try MemoryCache(configuration: .init(costLimit: 50_000_000)),
///     disk: try DiskCache(container: container, name: "feeds"),
///     serializer: JSONSerializer(Feed.self)
/// )
/// let feed = try await cache.value(forKey: url.absoluteString) {
///     try await download(url)          // runs once however many callers ask at the same time
/// }
/// ```
///
/// - A read that misses memory and hits disk decodes the value and promotes it into memory.
/// - Memory costs are the encoded sizes in bytes, so a memory cost limit is a byte budget,
///   unless ``Configuration/cost`` says otherwise (an image's decoded size, say).
/// - A write can keep a value in memory only or on disk only (``CachePlacement``), and
///   ``value(forKey:timeToLive:policy:orLoad:)`` can reload, stay offline or revalidate
///   (``ReadPolicy``), as `URLRequest.CachePolicy` does for `URLCache`.
/// - Presets: ``Configuration/imageCache(decodedCost:)`` with
///   ``MemoryCache/Configuration/imageCache(name:costLimit:)`` and
///   ``DiskCache/Configuration/imageCache(name:sizeLimit:)`` reproduce `SDImageCache`'s and
///   `AFImageCache`'s defaults.
/// - Bytes on disk that no longer decode (a format change) are removed and read as a miss.
///
/// ## Shared level
///
/// With a ``SharedCacheTier`` (e.g. `RedisSharedTier` from `StowageSharedTier`) the cache is
/// one of many nodes — processes or machines — over one shared level:
///
/// ```swift
/// let tier = try await RedisSharedTier.connect(url: "redis://cache.internal:6379", namespace: "feeds")
/// let cache = HybridCache(memory: memory, disk: disk, serializer: JSONSerializer(Feed.self), shared: tier)
/// let group = ServiceGroup(services: [tier, cache], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()     // or `Task { try await cache.run() }`
/// ```
///
/// The cache is a swift-service-lifecycle `Service`: other nodes' invalidations are applied
/// while ``run()`` runs. It subscribes when it is created, so what is sent before the run
/// begins is applied then; a cache with a shared level that is never run keeps serving
/// copies other nodes have since changed.
///
/// - Reads fall through memory → disk → shared and fill the levels above on the way back, with
///   the shared entry's remaining time-to-live.
/// - Writes go to every level (write-through); `timeToLive` becomes the shared level's expiry.
///   An overwrite or removal makes every other node drop its memory and disk copy of the key
///   (``SharedCacheInvalidation``). Invalidations sent while a node was not listening (before
///   it started, or while its invalidation channel was down) are lost to it, so it drops its
///   memory copies when the channel comes back, and confirms each older disk copy against the
///   shared level on its next read (``SharedTierOptions/confirmsDiskCopies``).
/// - ``value(forKey:timeToLive:policy:orLoad:)`` coalesces across nodes: one node takes the key's
///   load lock and loads; the others poll the shared level until the value appears, and load
///   themselves if it has not after ``SharedTierOptions/loadWaitTimeout``.
/// - Degradation: when the shared level fails (unreachable, timing out), the cache works on
///   memory and disk alone: reads miss the shared level, writes stay local, no caller sees the
///   error. The outage is logged once when it starts and once when it ends, and failed calls
///   are counted (``sharedTierFailures``, metric `stowage_cache_shared_tier_failures_total`).
///   Writes and removals the shared level missed are sent once it answers again
///   (``pendingSharedWrites``, up to ``SharedTierOptions/maximumPendingWrites`` keys), so the
///   other nodes hear of them and this node keeps them. A shared level that comes back empty
///   (restarted without its data) leaves local copies as they are.
public final class HybridCache<Value: Sendable>: Sendable {
    /// The memory tier.
    public let memory: MemoryCache<String, Value>
    /// The disk tier.
    public let disk: DiskCache
    /// How values become bytes for the disk tier.
    public let serializer: any CacheSerializer<Value>
    /// The level shared with other nodes, if any.
    public let shared: (any SharedCacheTier)?
    /// How values are costed in memory and the shared level is used.
    public let configuration: Configuration
    /// Loads and computations in flight, by key: concurrent callers share one.
    let loads = Mutex<[String: Task<Value, any Error>]>([:])
    /// Early recomputations started by `memoized` whose task has not ended yet: tests wait for
    /// it to reach zero before they check that no caller recomputed a second time.
    let refreshesInFlight = Atomic<Int>(0)
    /// Memory in front of disk in front of the shared level: reads, writes, removals and
    /// invalidations go through it, in the order that keeps memory from outliving disk (and from
    /// a clear of the disk cache), and it keeps the shared level's outage replay and horizon.
    package let levels: CacheLevels<Value>

    /// A cache over memory and disk, and a shared level if given.
    ///
    /// - Parameters:
    ///   - memory: The memory tier; its limits apply to the values held in memory.
    ///   - disk: The disk tier; its limits apply to the bytes on disk.
    ///   - serializer: How values are stored on disk (and in the shared level).
    ///   - shared: A level shared with other processes or machines; `nil` for a local cache.
    ///   - configuration: How values are costed in memory (default: by their encoded size) and
    ///     how the shared level is used (``Configuration/sharedLevel``).
    public init(
        memory: MemoryCache<String, Value>,
        disk: DiskCache,
        serializer: some CacheSerializer<Value>,
        shared: (any SharedCacheTier)? = nil,
        configuration: Configuration = Configuration()
    ) {
        self.configuration = configuration
        self.memory = memory
        self.disk = disk
        self.serializer = serializer
        self.shared = shared
        let sharedLevel = shared.map {
            SharedLevel(
                tier: $0,
                options: configuration.sharedLevel,
                name: disk.configuration.name,
                logger: disk.configuration.logger,
                clock: disk.configuration.clock
            )
        }
        levels = CacheLevels(
            memory: memory,
            disk: disk,
            shared: sharedLevel,
            logger: disk.configuration.logger,
            tracer: configuration.tracer
        )
    }

    /// The value for `key` from memory, else from disk (then kept in memory), else from the
    /// shared level (then kept on disk and in memory), else `nil`.
    ///
    /// - Throws: `StowageError` when the disk tier cannot be read (never for a shared-level
    ///   failure, which reads as a miss), or with code `.invalidConfiguration` when
    ///   ``Configuration/cost`` refuses a value read from below memory.
    @inlinable
    public func value(forKey key: String) async throws -> Value? {
        // Inlined into the caller, so a memory hit runs specialized for `Value`: one look at the
        // store's counters and one lookup.
        followStoreChanges()
        if let value = memory.value(forKey: key) { return value }
        return try await valueBelowMemory(forKey: key)
    }

    /// Empties memory first when the disk cache was cleared or removed since the last look, or
    /// another handle removed a value from it (``CacheLevels/followStoreChanges()``).
    @usableFromInline
    func followStoreChanges() {
        levels.followStoreChanges()
    }

    /// The rest of ``value(forKey:)`` after a memory miss: disk (confirmed against the shared
    /// level when it may have missed an invalidation), else the shared level, through the levels'
    /// one read-through sequence (``CacheLevels/readBelowMemory(_:through:)``, traced there).
    @usableFromInline
    func valueBelowMemory(forKey key: String) async throws -> Value? {
        try await levels.readBelowMemory(key, through: Reading(cache: self))
    }

    /// Stores `value` in memory, on disk and in the shared level (which then invalidates the
    /// other nodes' copies), or in the levels `placement` names.
    ///
    /// ```swift
    /// try await cache.setValue(thumbnail, forKey: url)                          // memory and disk
    /// try await cache.setValue(preview, forKey: url, placement: .memoryOnly)   // not persisted
    /// ```
    ///
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    ///   - timeToLive: How long until the value expires in every tier; `nil` for the local tiers'
    ///     defaults and no expiry in the shared level.
    ///   - tag: A label for ``removeAll(tagged:)`` (memory and disk; the shared level has no tags).
    ///     Refused with ``CachePlacement/memoryOnly``: tags live in the disk index.
    ///   - priority: `DiskCache.WritePriority.important` (the default), or `.opportunistic` for
    ///     nice-to-have data: when the volume's opportunistic capacity cannot take it, the value
    ///     is kept in memory (and the shared level) only, and the disk's older copy is removed
    ///     so that it cannot come back once memory lets the new one go.
    ///   - placement: Which levels keep the value (see ``CachePlacement``). Default ``CachePlacement/all``.
    ///     ``CachePlacement/memoryOnly`` keeps it in memory and removes the key's older disk and
    ///     shared copies, as SDImageCache's `storeImage:forKey:toDisk:NO` keeps an image out of
    ///     the disk cache (and the older copy cannot be served after memory lets the new one go);
    ///     ``CachePlacement/diskOnly`` stores it on disk and in the shared level and drops the
    ///     older memory copy.
    /// - Returns: What the disk tier did: `.stored`, or `.skippedForLowSpace(available:)`;
    ///   `.stored` for a memory-only write.
    /// - Throws: The serializer's error, or `StowageError` with code `.invalidConfiguration` when
    ///   ``Configuration/cost`` returns a cost out of range (nothing is stored or removed then:
    ///   an earlier value for the key stays readable), or `.invalidArgument` when a memory-only write has a `tag`,
    ///   or `StowageError` when the disk write fails (the memory tier then does not keep the
    ///   value either). A failed shared write is not thrown: it is logged and counted, and the
    ///   value stays local.
    @discardableResult
    public func setValue(
        _ value: Value,
        forKey key: String,
        timeToLive: Duration? = nil,
        tag: String? = nil,
        priority: DiskCache.WritePriority = .important,
        placement: CachePlacement = .all
    ) async throws -> DiskCache.WriteOutcome {
        try await store(
            value,
            forKey: key,
            timeToLive: timeToLive,
            tag: tag,
            computeSeconds: nil,
            priority: priority,
            placement: placement
        )
    }

    /// Stores `value` in the tiers `placement` names, with the disk tier's tag and compute time.
    @discardableResult
    func store(
        _ value: Value,
        forKey key: String,
        timeToLive: Duration?,
        tag: String?,
        computeSeconds: Double?,
        priority: DiskCache.WritePriority = .important,
        placement: CachePlacement = .all
    ) async throws -> DiskCache.WriteOutcome {
        let data = try serializer.encode(value)
        // A memory-only write removes the shared copy, older than the value memory now holds: were
        // it left, this node would read it back once memory let the new value go. Either way, a
        // fill of this node's that read the shared copy before this write reached it keeps nothing.
        return try await levels.writingEverywhere(key) {
            try await levels.removingEverywhere(when: placement == .memoryOnly) {
                let outcome = try await storeLocally(
                    value,
                    data: data,
                    forKey: key,
                    timeToLive: timeToLive,
                    tag: tag,
                    computeSeconds: computeSeconds,
                    priority: priority,
                    placement: placement
                )
                if placement == .memoryOnly {
                    await levels.removeShared(key)
                } else {
                    await levels.writeShared(data, forKey: key, timeToLive: timeToLive)
                }
                return outcome
            }
        }
    }

    /// Stores `value` in memory and on disk only, or in the one `placement` names (the local half
    /// of a write or of a load).
    ///
    /// - Throws: `StowageError` with code `.invalidConfiguration`, before anything changes, when
    ///   ``Configuration/cost`` refuses the value (`.invalidArgument` for a tag on a memory-only write); what the disk tier throws.
    @discardableResult
    func storeLocally(
        _ value: Value,
        data: Data,
        forKey key: String,
        timeToLive: Duration?,
        tag: String? = nil,
        computeSeconds: Double? = nil,
        priority: DiskCache.WritePriority = .important,
        placement: CachePlacement = .all
    ) async throws -> DiskCache.WriteOutcome {
        if placement == .memoryOnly, let tag {
            // Tags live in the disk index, where removeAll(tagged:) finds the keys to remove: a
            // memory-only value would stay readable after a purge of its tag (a sign-out, say).
            throw StowageError.invalidArgument(
                "cannot store '\(key)' in memory only with the tag '\(tag)': tags are kept in the disk cache's "
                    + "index, so removeAll(tagged:) would not find it; store it with placement .all, or untagged; "
                    + "nothing was changed"
            )
        }
        // Costed even when memory does not keep it: the next read promotes a disk-only value,
        // and a cost refused then would make the key unreadable after a write that succeeded.
        let cost = try configuration.memoryCost(of: value, encodedByteCount: data.count, key: key)
        var outcome = DiskCache.WriteOutcome.stored
        try await levels.write(
            value,
            forKey: key,
            cost: cost,
            timeToLive: timeToLive,
            keepsInMemory: placement.keepsInMemory
        ) {
            outcome = try await writeToDisk(
                placement == .memoryOnly ? nil : data,
                forKey: key,
                timeToLive: timeToLive,
                tag: tag,
                computeSeconds: computeSeconds,
                priority: priority
            )
        }
        return outcome
    }

    /// The disk half of ``storeLocally(_:data:forKey:timeToLive:tag:computeSeconds:priority:placement:)``
    /// (and of a shared fill, ``Reading``), off the cooperative pool, in a
    /// ``CacheTracing/SpanName/diskWrite`` span: stores `data`, or, for a memory-only write
    /// (`nil`), removes the older disk copy.
    func writeToDisk(
        _ data: Data?,
        forKey key: String,
        timeToLive: Duration?,
        tag: String? = nil,
        computeSeconds: Double? = nil,
        priority: DiskCache.WritePriority = .important
    ) async throws -> DiskCache.WriteOutcome {
        try await levels.activeTracer.withSpanIfTracing(CacheTracing.SpanName.diskWrite) { span in
            span.recordCacheKey(key, cacheName: disk.configuration.name)
            guard let data else {
                // SDImageCache's `storeImage:forKey:toDisk:NO` leaves the disk alone; here the
                // older disk copy goes, or it would be read back once memory evicts the new value.
                _ = try await disk.removeData(forKey: key)
                return .stored
            }
            if span.isRecording { span.attributes[CacheTracing.Attribute.bytes] = data.count }
            return try await BlockingWork.run {
                let outcome = try self.disk.store(
                    data,
                    forKey: key,
                    timeToLive: timeToLive?.timeInterval,
                    tag: tag,
                    computeSeconds: computeSeconds,
                    priority: priority
                )
                // The older disk copy must not outlive the newer value memory now holds.
                if case .skippedForLowSpace = outcome { _ = try self.disk.removeData(forKey: key) }
                return outcome
            }
        }
    }

    /// Removes `key` from every tier (other nodes drop their copies), or from the one level
    /// `placement` names.
    ///
    /// - Parameters:
    ///   - key: The key to remove.
    ///   - placement: ``CachePlacement/all`` (the default): memory, disk and the shared level.
    ///     ``CachePlacement/memoryOnly``: the memory copy only, as SDImageCache's `clearMemory`
    ///     does for every key; the next read promotes the disk copy again.
    ///     ``CachePlacement/diskOnly``: the disk copy only; memory keeps its copy until it is
    ///     evicted, and the shared level is left alone.
    /// - Throws: `StowageError` when the disk tier cannot remove the copy (the memory copy is
    ///   gone all the same for ``CachePlacement/all``).
    public func removeValue(forKey key: String, from placement: CachePlacement = .all) async throws {
        switch placement {
        case .memoryOnly:
            levels.removeFromMemory(key)
            return
        case .diskOnly:
            try await levels.removeFromDisk(key)
            return
        case .all:
            try await levels.removingEverywhere {
                try await levels.remove(key)
                await levels.removeShared(key)
            }
        }
    }

    /// Empties the memory and disk tiers. The shared level is left alone: other nodes use it,
    /// and its entries expire by their time-to-live (remove keys one by one to drop them
    /// fleet-wide).
    ///
    /// - Returns: The disk tier's report (`DiskCache.removeAll()`): a mount point inside the
    ///   disk tier's directory keeps its files and is named among its failures
    ///   (`ClearReport.Failure.isOtherFileSystem`). Without a disk tier, an empty report whose
    ///   path is empty.
    @discardableResult
    public func removeAll() async throws -> ClearReport {
        try await levels.removeAll()
    }

    /// Removes every entry stored with `tag`; returns the keys removed.
    ///
    /// The disk tier's index finds them (one indexed `DELETE`); the same keys then leave memory
    /// and, with a shared level, the shared level (so other nodes drop their copies too).
    @discardableResult
    public func removeAll(tagged tag: String) async throws -> [String] {
        try await levels.removingEverywhere {
            let keys = try await levels.removeAll(tagged: tag)
            for key in keys { await levels.removeShared(key) }
            return keys
        }
    }

    /// The cached value for `key`, or the value `load` produces, which is then stored; or as
    /// `policy` says.
    ///
    /// Concurrent calls for the same key share one load: `load` runs once and every caller
    /// gets its value or its error. A failing load stores nothing, so the next call tries again.
    /// With a shared level, calls on different nodes coalesce too (see "Shared level" above).
    ///
    /// ```swift
    /// let feed = try await cache.value(forKey: url, policy: .reloadIgnoringCache) { try await download(url) }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - timeToLive: How long the loaded value lives; `nil` for the tiers' defaults.
    ///   - policy: When to use the cache and when to load; see ``ReadPolicy``. Default
    ///     ``ReadPolicy/useCacheElseLoad``.
    ///   - load: Produces the value on a miss, e.g. a download.
    /// - Throws: The load's error, or a `StowageError` from the disk tier; with
    ///   ``ReadPolicy/returnCacheDontLoad``, `StowageError` with code `.notFound` on a miss;
    ///   with a shared level, `StowageError` with code `.invalidConfiguration` on a load when
    ///   ``Configuration/sharedLevel`` does not pass ``SharedTierOptions/validate()``.
    @inlinable
    public func value(
        forKey key: String,
        timeToLive: Duration? = nil,
        policy: ReadPolicy = .useCacheElseLoad,
        orLoad load: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        guard case .useCacheElseLoad = policy else {
            return try await value(forKey: key, timeToLive: timeToLive, following: policy, load: load)
        }
        // Inlined, as `value(forKey:)`: a memory hit runs specialized for `Value`.
        followStoreChanges()
        if let value = memory.value(forKey: key) { return value }
        return try await loadOnce(key: key, timeToLive: timeToLive, load: load)
    }

    /// The rest of ``value(forKey:timeToLive:policy:orLoad:)`` after a memory miss: one load per key
    /// at a time (across the fleet with a shared level).
    @usableFromInline
    func loadOnce(
        key: String,
        timeToLive: Duration?,
        load: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let task = loads.withLock { loads in
            if let running = loads[key] { return running }
            let task = Task<Value, any Error> {
                defer { _ = self.loads.withLock { $0.removeValue(forKey: key) } }
                if let cached = try await self.value(forKey: key) { return cached }
                return try await self.loadCoordinated(key: key, timeToLive: timeToLive, load: load)
            }
            loads[key] = task
            return task
        }
        return try await task.value
    }

    /// Failed calls to the shared level since the cache was created.
    public var sharedTierFailures: Int { levels.sharedLevel?.health.failureTotal ?? 0 }

    /// Hits and misses of the shared level (reads that reached it), and values it stored.
    public var sharedStatistics: CacheStatistics { levels.sharedLevel?.counters.statistics ?? CacheStatistics() }

    /// Keys whose latest write or removal the shared level has not taken yet (it was down);
    /// they are sent when it answers again.
    public var pendingSharedWrites: Int { levels.sharedLevel?.pendingCount ?? 0 }
}
