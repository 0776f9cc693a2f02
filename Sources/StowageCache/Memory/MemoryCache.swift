import Foundation
import StowageCore
import Synchronization

/// A thread-safe in-memory cache with least-recently-used eviction, count and cost limits,
/// time-to-live, and memory-pressure handling.
///
/// ```swift
/// let cache = try MemoryCache<String, Data>(configuration: .init(countLimit: 1_000))
/// cache.setValue(data, forKey: "avatar-42", cost: data.count)
/// let hit = cache.value(forKey: "avatar-42")
/// ```
///
/// - Reading a value makes it the most recently used; when a write takes the cache over
///   ``Configuration/countLimit`` or ``Configuration/costLimit``, the least recently used
///   entries go until it is back under both. Every operation but ``removeExpired()`` and the
///   trims is O(1).
/// - Expired entries are dropped when a lookup finds them and by ``removeExpired()``; until
///   then they count towards ``count`` and ``totalCost``.
/// - ``Configuration/onEviction`` hears of every removal after the lock is released, and values
///   are released outside it too, so a callback or a value's `deinit` may use the cache.
/// - The cache registers itself (weakly) with ``Configuration/memoryPressureSource``;
///   ``handleMemoryPressure(_:)`` can also be called directly on any platform.
/// - Hits, misses, writes and evictions are counted in ``statistics`` and reported through
///   swift-metrics with the dimensions `cache` = ``Configuration/name`` and `tier` = `memory`.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable, MemoryPressureHandling {
    /// The configuration the cache was created with.
    public let configuration: Configuration

    // Internal and inlinable where the hot path needs it: clients then get `value(forKey:)`
    // and `setValue` specialized for their Key and Value (measured faster than the
    // generic entry points across modules: 4-8x in MemoryCacheScenario).
    @usableFromInline let storage: Mutex<Storage>
    private let counters: CacheCounters
    @usableFromInline let contentChanges = MemoryCacheContentChanges()
    /// Entries evicted for the count or cost limit (``limitEvictionCount``).
    private let limitEvictions = Atomic<Int>(0)
    /// The cache's place in the process's registry of open stores while it lives, so that
    /// "clear caches" (`ClearCaches`, `stowage clear-caches`) reaches it: no directory names a
    /// cache in memory (URLCache's `removeAllCachedResponses` reaches its memory the same way).
    private let openStore: OpenStores.Registration

    /// Creates an empty cache.
    ///
    /// - Parameter configuration: Limits, time-to-live, clock and eviction callback; see
    ///   ``Configuration``. Default: no limits.
    /// - Throws: `StowageError` with code `.invalidConfiguration` when a limit or the default
    ///   time-to-live is not positive.
    public init(configuration: Configuration = Configuration()) throws {
        try configuration.validate()
        self.configuration = configuration
        storage = Mutex(
            Storage(
                countLimit: configuration.countLimit ?? .max,
                costLimit: configuration.costLimit ?? .max,
                contentChanges: contentChanges
            )
        )
        counters = CacheCounters(name: configuration.name, tier: "memory")
        openStore = OpenStores.process.register("MemoryCache '\(configuration.name)'")
        openStore.whenCleared { [weak self] in self?.removeAll() }
        configuration.memoryPressureSource?.register(self)
    }

    // MARK: - Reading

    /// The value stored for `key`, or `nil` when there is none or it has expired.
    ///
    /// A hit makes the entry the most recently used. An expired entry is removed and reported
    /// to ``Configuration/onEviction`` with ``EvictionReason/expired``.
    ///
    /// - Parameter key: The key to look up.
    /// - Returns: The live value, or `nil`.
    @inlinable
    public func value(forKey key: Key) -> Value? {
        let lookup = storage.withLock { storage in
            storage.lookup(key) { self.configuration.clock.now().timeIntervalSinceReferenceDate }
        }
        switch lookup {
        case .hit(let value, let cost):
            recordHit(bytes: cost)
            return value
        case .miss:
            recordMiss()
            return nil
        case .expired(let removal):
            recordMiss()
            report(removal)
            return nil
        }
    }

    /// The number of entries, including expired ones not yet removed.
    public var count: Int { storage.withLock { $0.count } }

    /// The sum of the entries' costs, including expired ones not yet removed.
    public var totalCost: Int { storage.withLock { $0.totalCost } }

    /// How many entries were evicted for the count or cost limit since the cache was created
    /// (not those removed, expired or let go under memory pressure): one atomic load, for a
    /// caller that asks on every request whether the cache is full.
    package var limitEvictionCount: Int { limitEvictions.load(ordering: .relaxed) }

    /// Hits, misses, writes and evictions since the cache was created.
    public var statistics: CacheStatistics { counters.statistics }

    // MARK: - Writing

    /// Stores `value` for `key` as the most recently used entry, replacing any previous value.
    ///
    /// If the write takes the cache over a limit, least recently used entries are evicted
    /// until it is back under both limits; a value whose cost alone exceeds
    /// ``Configuration/costLimit`` is evicted at once.
    ///
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: Its key.
    ///   - cost: What the entry counts towards ``Configuration/costLimit``, e.g. its size in
    ///     bytes; `0` (the default) or more. Even without a cost limit the total stays at most
    ///     `Int.max`: least recently used entries go to make room for a cost that would pass it.
    ///   - timeToLive: How long until the value expires, more than zero; `nil` (the default)
    ///     for ``Configuration/defaultTimeToLive``.
    @inlinable
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 0, timeToLive: Duration? = nil) {
        precondition(cost >= 0, "a MemoryCache entry's cost must be >= 0, not \(cost)")
        let expiry: Double
        if let timeToLive = timeToLive ?? configuration.defaultTimeToLive {
            precondition(
                timeToLive > .zero,
                "a MemoryCache entry's timeToLive must be more than zero, not \(timeToLive)"
            )
            expiry = configuration.clock.now().timeIntervalSinceReferenceDate + timeToLive.timeInterval
        } else {
            expiry = .infinity
        }
        let insertion = storage.withLock { $0.insert(value, forKey: key, cost: cost, expiry: expiry) }
        recordWrite(bytes: cost)
        if let first = insertion.evictions.first {
            report(first)
            insertion.evictions.rest.forEach(report)
        }
    }

    /// The value for `key`; setting `nil` removes it, setting a value stores it with cost `0`
    /// and the default time-to-live.
    ///
    /// - Parameter key: The key to read or write.
    public subscript(key: Key) -> Value? {
        get { value(forKey: key) }
        set {
            if let newValue {
                setValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    // MARK: - Removing

    /// Removes the value for `key`, reporting it to ``Configuration/onEviction`` with
    /// ``EvictionReason/explicit``.
    ///
    /// - Parameter key: The key to remove.
    /// - Returns: The removed value, or `nil` when there was none (an expired value is returned
    ///   too: it was still stored).
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        guard let removal = storage.withLock({ $0.remove(key) }) else { return nil }
        report(removal)
        return removal.value
    }

    /// Removes every entry whose key satisfies `predicate` (e.g. a key prefix), reporting each
    /// with ``EvictionReason/explicit``. Takes time proportional to ``count``.
    ///
    /// - Returns: How many entries were removed.
    @discardableResult
    public func removeValues(where predicate: @Sendable (Key) -> Bool) -> Int {
        let removed = storage.withLock { $0.removeAll(where: predicate) }
        removed.forEach(report)
        return removed.count
    }

    /// Removes every entry, reporting each to ``Configuration/onEviction`` with
    /// ``EvictionReason/explicit``, least recently used first.
    public func removeAll() {
        removeAll(reason: .explicit)
    }

    /// Removes least recently used entries until at most `count` remain.
    ///
    /// - Parameter count: The most entries to keep, `0` or more.
    public func trim(toCount count: Int) {
        precondition(count >= 0, "cannot trim a MemoryCache to \(count) entries: the count must be >= 0")
        trim(toCount: count, cost: .max, reason: .explicit)
    }

    /// Removes least recently used entries until their total cost is at most `cost`.
    ///
    /// - Parameter cost: The most total cost to keep, `0` or more.
    public func trim(toCost cost: Int) {
        precondition(cost >= 0, "cannot trim a MemoryCache to a cost of \(cost): the cost must be >= 0")
        trim(toCount: .max, cost: cost, reason: .explicit)
    }

    /// Removes every expired entry, reporting each with ``EvictionReason/expired``.
    ///
    /// Takes time proportional to ``count``; lookups drop expired entries on their own, so call
    /// this only to release their memory sooner (e.g. from a periodic task).
    ///
    /// - Returns: How many entries were removed.
    @discardableResult
    public func removeExpired() -> Int {
        let now = configuration.clock.now().timeIntervalSinceReferenceDate
        let removed = storage.withLock { $0.removeExpired(now: now) }
        removed.forEach(report)
        return removed.count
    }

    // MARK: - Memory pressure

    /// Gives memory back as ``Configuration/memoryPressureResponse`` says for `level`: by
    /// default ``MemoryPressureLevel/warning`` trims the cache to half its current count and
    /// half its current total cost, ``MemoryPressureLevel/critical`` removes every entry.
    /// Removed entries are reported with ``EvictionReason/memoryPressure``.
    ///
    /// Call it yourself where the platform's signal does not reach a ``MemoryPressureSource``.
    ///
    /// - Parameter level: How hard the system is pressed.
    public func handleMemoryPressure(_ level: MemoryPressureLevel) {
        switch configuration.memoryPressureResponse.action(for: level) {
        case .ignore:
            break
        case .halve:
            let (count, cost) = storage.withLock { ($0.count, $0.totalCost) }
            trim(toCount: count / 2, cost: cost / 2, reason: .memoryPressure)
        case .empty:
            removeAll(reason: .memoryPressure)
        }
    }

    // MARK: - Reporting

    private func trim(toCount count: Int, cost: Int, reason: EvictionReason) {
        let removed = storage.withLock { $0.trim(toCount: count, cost: cost, reason: reason) }
        removed.forEach(report)
    }

    private func removeAll(reason: EvictionReason) {
        // Swap in an empty storage under the lock (O(1); a storage is not Sendable, so it is
        // made inside); report and release the old one outside it.
        let countLimit = configuration.countLimit ?? .max
        let removed = storage.withLock { storage in
            // The limit in force, less any cost set aside (`setAside(cost:)`), stays.
            var removed = Storage(countLimit: countLimit, costLimit: storage.costLimit, contentChanges: contentChanges)
            swap(&storage, &removed)
            contentChanges.advance()
            return removed
        }
        counters.recordEviction(reason, count: removed.count, bytes: Int64(removed.totalCost))
        if let onEviction = configuration.onEviction {
            removed.forEach { key, value in onEviction(key, value, reason) }
        }
    }

    @usableFromInline
    func recordHit(bytes: Int) { counters.recordHit(bytes: bytes) }

    @usableFromInline
    func recordMiss() { counters.recordMiss() }

    @usableFromInline
    func recordWrite(bytes: Int) { counters.recordWrite(bytes: Int64(bytes)) }

    @usableFromInline
    func report(_ removal: Removal) {
        if removal.reason == .costLimit || removal.reason == .countLimit {
            limitEvictions.wrappingAdd(1, ordering: .relaxed)
        }
        counters.recordEviction(removal.reason, bytes: Int64(removal.cost))
        configuration.onEviction?(removal.key, removal.value, removal.reason)
    }
}
