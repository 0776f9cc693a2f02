/// The order in which a storage monitor (`StorageMonitor`, in StowageHousekeeping) frees space,
/// cheapest loss first: scratch files, then caches whose content the network gives back on
/// demand (an HTTP cache's responses), then other caches, then files the app marked purgeable
/// (`Marks.setPurgeable`), then purgeable directories (data the app chose to keep until a policy
/// says otherwise).
public enum PurgingTier: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Scratch files nobody reads again, such as old entries of the temporary directory.
    case temporary
    /// Caches of what a server gives back on request, such as HTTP responses.
    case refetchable
    /// Other caches: values the app can compute or fetch again, at a cost.
    case cache
    /// Files and directories the app marked purgeable (`Marks.setPurgeable`), oldest first: Apple's
    /// storage guide's "purgeable" data, which the app can do without but did not put in a cache.
    case markedItems
    /// Directories the app registered to keep until their policy says otherwise.
    case purgeableDirectories

    /// Orders tiers as they are purged: the earlier tier first.
    public static func < (lhs: PurgingTier, rhs: PurgingTier) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The text logs and messages show.
    public var description: String {
        switch self {
        case .temporary: "temporary"
        case .refetchable: "refetchable caches"
        case .cache: "caches"
        case .markedItems: "marked items"
        case .purgeableDirectories: "purgeable directories"
        }
    }
}

/// What a `StorageMonitor` (in StowageHousekeeping) asks of one ``Purging`` member: the bytes the volume still needs
/// back to leave pressure.
public struct PurgeRequest: Sendable, Hashable {
    /// Bytes to free; zero asks only that the member's own limits and policies be applied.
    public var bytesToFree: ByteCount

    /// A request to free `bytesToFree` (zero: apply only the member's own limits and policies).
    public init(bytesToFree: ByteCount = .zero) {
        self.bytesToFree = bytesToFree
    }
}

/// Something that can give space back when the volume runs short: what a `StorageMonitor` (in StowageHousekeeping)
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

    /// ``purge(_:)``, also naming what it left in place on purpose: mount points of another
    /// file system or mount inside what it purges (`"skipped: another file system"`, as
    /// `rm --one-file-system`), which a `StorageMonitor` lists in its report. The default runs
    /// ``purge(_:)`` and names nothing; a member that removes files through a walk implements it.
    func purgeNamingSkips(_ request: PurgeRequest) async throws -> PurgeOutcome
}

/// What one ``Purging`` member's purge freed, and what it left in place on purpose.
public struct PurgeOutcome: Sendable, Hashable {
    /// Allocated bytes given back.
    public var bytesFreed: ByteCount
    /// Mount points of another file system or mount, left whole with everything under them
    /// (``ClearReport/Failure/isOtherFileSystem``).
    public var skipped: [ClearReport.Failure]

    /// What a purge freed and skipped.
    public init(bytesFreed: ByteCount, skipped: [ClearReport.Failure] = []) {
        self.bytesFreed = bytesFreed
        self.skipped = skipped
    }
}

extension Purging {
    /// Most members are ordinary caches: ``PurgingTier/cache``.
    public var purgingTier: PurgingTier { .cache }

    /// Applies the member's own limits and policies only (a request for zero bytes).
    public func purge() async throws -> ByteCount {
        try await purge(PurgeRequest())
    }

    /// Runs ``purge(_:)``; names nothing skipped.
    public func purgeNamingSkips(_ request: PurgeRequest) async throws -> PurgeOutcome {
        PurgeOutcome(bytesFreed: try await purge(request))
    }
}
