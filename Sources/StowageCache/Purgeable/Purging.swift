import StowageCore

/// The order in which a ``StorageMonitor`` frees space, cheapest loss first: scratch files,
/// then caches whose content the network gives back on demand (an HTTP cache's responses), then
/// other caches, then purgeable directories (data the app chose to keep until a policy says
/// otherwise).
public enum PurgingTier: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    case temporary
    /// Caches of what a server gives back on request, such as HTTP responses.
    case refetchable
    case cache
    case purgeableDirectories

    /// Orders tiers as they are purged: the earlier tier first.
    public static func < (lhs: PurgingTier, rhs: PurgingTier) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The text logs and messages show.
    public var description: String {
        switch self {
        case .temporary: "temporary"
        case .refetchable: "refetchable caches"
        case .cache: "caches"
        case .purgeableDirectories: "purgeable directories"
        }
    }
}

/// What a ``StorageMonitor`` asks of one ``Purging`` member: the bytes the volume still needs
/// back to leave pressure.
public struct PurgeRequest: Sendable, Hashable {
    /// Bytes to free; zero asks only that the member's own limits and policies be applied.
    public var bytesToFree: ByteCount

    /// A request to free `bytesToFree` (zero: apply only the member's own limits and policies).
    public init(bytesToFree: ByteCount = .zero) {
        self.bytesToFree = bytesToFree
    }
}

/// Something that can give space back when the volume runs short: what a ``StorageMonitor``
/// calls, tier by tier.
public protocol Purging: Sendable {
    /// A name for reports and logs, e.g. the cache's name.
    var purgingName: String { get }

    /// When it is purged relative to others; ``PurgingTier/cache`` unless it says otherwise.
    var purgingTier: PurgingTier { get }

    /// Frees what it can without losing anything that cannot be regenerated: at least
    /// `request.bytesToFree` when it holds that much, going below its own limits if it must,
    /// least valuable first.
    ///
    /// - Returns: The bytes freed.
    func purge(_ request: PurgeRequest) async throws -> ByteCount
}

extension Purging {
    /// Most members are ordinary caches: ``PurgingTier/cache``.
    public var purgingTier: PurgingTier { .cache }

    /// Applies the member's own limits and policies only (a request for zero bytes).
    public func purge() async throws -> ByteCount {
        try await purge(PurgeRequest())
    }
}

extension DiskCache: Purging {
    /// The cache's ``DiskCache/Configuration/name``.
    public var purgingName: String { configuration.name }

    /// Trims the cache now (`trim(freeing:)`): expired and too-old entries, then least
    /// recently used ones down to the target of any limit it is over, and further, below its
    /// limits, until `request.bytesToFree` bytes of values are gone (or the cache is empty).
    ///
    /// - Returns: The bytes of values removed.
    public func purge(_ request: PurgeRequest) async throws -> ByteCount {
        let before = try await usage().size
        let report = try await trim(freeing: request.bytesToFree)
        return max(.zero, before - report.remainingSize)
    }
}
