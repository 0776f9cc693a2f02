import StowageCore

/// The order in which a ``StorageMonitor`` frees space, cheapest loss first: scratch files,
/// then HTTP responses (the network has them), then other caches, then purgeable directories
/// (data the app chose to keep until a policy says otherwise).
public enum PurgingTier: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    case temporary
    case httpCache
    case cache
    case purgeableDirectories

    public static func < (lhs: PurgingTier, rhs: PurgingTier) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .temporary: "temporary"
        case .httpCache: "HTTP cache"
        case .cache: "caches"
        case .purgeableDirectories: "purgeable directories"
        }
    }
}

/// Something that can give space back when the volume runs short: what a ``StorageMonitor``
/// calls, tier by tier.
public protocol Purging: Sendable {
    /// A name for reports and logs, e.g. the cache's name.
    var purgingName: String { get }

    /// When it is purged relative to others; ``PurgingTier/cache`` unless it says otherwise.
    var purgingTier: PurgingTier { get }

    /// Frees what it can without losing anything that cannot be regenerated.
    ///
    /// - Returns: The bytes freed.
    func purge() async throws -> ByteCount
}

extension Purging {
    public var purgingTier: PurgingTier { .cache }
}

extension DiskCache: Purging {
    /// The cache's ``DiskCache/Configuration/name``.
    public var purgingName: String { configuration.name }

    /// Trims the cache now (``trim()``): expired and too-old entries, then least recently used
    /// ones down to the target of any limit it is over.
    ///
    /// - Returns: The bytes of values removed.
    public func purge() async throws -> ByteCount {
        let before = try await usage().size
        let report = try await trim()
        return max(.zero, before - report.remainingSize)
    }
}
