/// Why an entry left a cache.
public enum EvictionReason: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The count limit was exceeded; the least recently used entries went.
    case countLimit
    /// The total cost (memory) or size (disk) limit was exceeded.
    case costLimit
    /// The entry's time-to-live or the cache's age limit passed.
    case expired
    /// The system reported memory pressure.
    case memoryPressure
    /// The caller removed it (`removeValue`, `removeAll`, `trim`).
    case explicit

    /// The text logs and messages show.
    public var description: String { rawValue }
}
