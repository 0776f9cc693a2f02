import Foundation
import Logging
import StowageCore
import Synchronization

/// Memory in front of disk: typed values, written through to both, read from memory first.
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
/// - Memory costs are the encoded sizes in bytes, so a memory cost limit is a byte budget.
/// - Bytes on disk that no longer decode (a format change) are removed and read as a miss.
public final class HybridCache<Value: Sendable>: Sendable {
    /// The memory tier.
    public let memory: MemoryCache<String, Value>
    /// The disk tier.
    public let disk: DiskCache
    /// How values become bytes for the disk tier.
    public let serializer: any CacheSerializer<Value>
    /// Loads and computations in flight, by key: concurrent callers share one.
    let loads = Mutex<[String: Task<Value, any Error>]>([:])

    /// A cache over the two tiers.
    ///
    /// - Parameters:
    ///   - memory: The memory tier; its limits apply to the values held in memory.
    ///   - disk: The disk tier; its limits apply to the bytes on disk.
    ///   - serializer: How values are stored on disk.
    public init(memory: MemoryCache<String, Value>, disk: DiskCache, serializer: some CacheSerializer<Value>) {
        self.memory = memory
        self.disk = disk
        self.serializer = serializer
    }

    /// The value for `key` from memory, else from disk (then kept in memory), else `nil`.
    ///
    /// - Throws: ``StowageError`` when the disk tier cannot be read.
    public func value(forKey key: String) async throws -> Value? {
        if let value = memory.value(forKey: key) { return value }
        guard let data = try await disk.data(forKey: key) else { return nil }
        do {
            let value = try serializer.decode(data)
            memory.setValue(value, forKey: key, cost: data.count)
            return value
        } catch {
            disk.configuration.logger.warning(
                "cached bytes no longer decode; removing them",
                metadata: ["key": "\(key)", "error": "\(error)"]
            )
            try await disk.removeData(forKey: key)
            return nil
        }
    }

    /// Stores `value` in memory and on disk.
    ///
    /// - Parameters:
    ///   - timeToLive: Seconds until the value expires in both tiers; `nil` for the tiers'
    ///     defaults.
    ///   - tag: A label for ``removeAll(tagged:)``.
    /// - Throws: The serializer's error (nothing is stored), or ``StowageError`` when the disk
    ///   write fails (the memory tier then does not keep the value either).
    public func setValue(
        _ value: Value,
        forKey key: String,
        timeToLive: TimeInterval? = nil,
        tag: String? = nil
    ) async throws {
        try await store(value, forKey: key, timeToLive: timeToLive, tag: tag, computeSeconds: nil)
    }

    /// Stores `value` in both tiers, with the disk tier's tag and compute time.
    func store(
        _ value: Value,
        forKey key: String,
        timeToLive: TimeInterval?,
        tag: String?,
        computeSeconds: Double?
    ) async throws {
        let data = try serializer.encode(value)
        do {
            try await BlockingWork.run {
                try self.disk.store(
                    data,
                    forKey: key,
                    timeToLive: timeToLive,
                    tag: tag,
                    computeSeconds: computeSeconds
                )
            }
        } catch {
            _ = memory.removeValue(forKey: key)
            throw error
        }
        memory.setValue(value, forKey: key, cost: data.count, timeToLive: timeToLive)
    }

    /// Removes `key` from both tiers.
    public func removeValue(forKey key: String) async throws {
        _ = memory.removeValue(forKey: key)
        try await disk.removeData(forKey: key)
    }

    /// Empties both tiers.
    public func removeAll() async throws {
        memory.removeAll()
        try await disk.removeAll()
    }

    /// Removes every entry stored with `tag` from both tiers; returns the keys removed.
    ///
    /// The disk tier's index finds them (one indexed `DELETE`); the same keys then leave memory.
    @discardableResult
    public func removeAll(tagged tag: String) async throws -> [String] {
        let keys = try await disk.removeAll(tagged: tag)
        for key in keys { _ = memory.removeValue(forKey: key) }
        return keys
    }

    /// The cached value for `key`, or the value `load` produces, which is then stored.
    ///
    /// Concurrent calls for the same key share one load: `load` runs once and every caller
    /// gets its value or its error. A failing load stores nothing, so the next call tries again.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - timeToLive: Seconds the loaded value lives; `nil` for the tiers' defaults.
    ///   - load: Produces the value on a miss, e.g. a download.
    /// - Throws: The load's error, or a ``StowageError`` from the disk tier.
    public func value(
        forKey key: String,
        timeToLive: TimeInterval? = nil,
        orLoad load: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        if let value = memory.value(forKey: key) { return value }
        let task = loads.withLock { loads in
            if let running = loads[key] { return running }
            let task = Task<Value, any Error> {
                defer { _ = self.loads.withLock { $0.removeValue(forKey: key) } }
                if let cached = try await self.value(forKey: key) { return cached }
                let loaded = try await load()
                try await self.setValue(loaded, forKey: key, timeToLive: timeToLive)
                return loaded
            }
            loads[key] = task
            return task
        }
        return try await task.value
    }
}
