import Foundation

extension HybridCache {
    /// How a hybrid cache's values go through its levels' read-through sequence
    /// (``CacheLevels/read(_:through:)``): memory keeps the value itself, costed by
    /// ``Configuration/cost``; bytes from disk or the shared level decode through the serializer;
    /// a shared copy is kept with the time it has left there, as a write with that time-to-live.
    struct Reading: LevelReading {
        let cache: HybridCache

        func found(inMemory entry: Value) -> Value? { entry }

        func decode(_ data: Data, forKey key: String) throws -> (found: Value, entry: Value) {
            let value = try cache.serializer.decode(data)
            return (value, value)
        }

        func memoryCost(of entry: Value, byteCount: Int, forKey key: String) throws -> Int? {
            try cache.configuration.memoryCost(of: entry, encodedByteCount: byteCount, key: key)
        }

        func localLifetime(of entry: SharedCacheEntry) -> Duration? { entry.timeToLive }

        func writeToDisk(_ data: Data, forKey key: String, timeToLive: Duration?) async throws {
            _ = try await cache.writeToDisk(data, forKey: key, timeToLive: timeToLive)
        }
    }
}
