import Foundation
import StowageCore

/// The files and directories inside a container that carry Stowage's purgeable mark
/// (`Marks.setPurgeable`), deleted oldest first when the volume runs short of space.
///
/// Apple's storage guide calls such data *purgeable*: the app can do without it (a downloaded
/// attachment it can fetch again, an export it can rebuild) but keeps it outside a cache. The
/// mark says so; this type acts on it. A ``StorageMonitor`` purges marked items after the
/// regenerable caches and before the purgeable directories' sweep (`PurgingTier.markedItems`);
/// `stowage purge --marked` does the same on demand.
///
/// ```swift
/// try Marks.setPurgeable(true, at: attachmentURL)
/// let marked = MarkedItems(container: container)
/// let report = try await marked.purge(atLeast: ByteCount(500_000_000))
/// for item in report.removed { print(item.path, item.bytes.formatted(.compact)) }
/// ```
///
/// What it promises:
/// - **Inside the container only, never through a link.** Each location is opened confined to
///   the container; the walk opens every entry with `O_NOFOLLOW` and reads the mark through the
///   descriptor it opened, so a symbolic link (marked or not, to a marked target or not) is
///   never followed, and a name is never resolved twice.
/// - **The item that was marked.** An item is removed only if the entry still has the identity
///   (device and inode) it had when its mark was read: a file swapped in since is left alone.
/// - **Locations themselves stay.** The caches and temporary directories carry the mark as a
///   statement about their contents (`Container`); they are never removed, and what they hold
///   is removed only where it is marked itself. A marked directory that holds a location's
///   directory (a location linked into it from inside the root) is skipped and reported.
/// - **A marked directory goes whole**, aged by the newest modification inside it; nothing
///   below a marked directory is considered on its own.
/// - Names that are not UTF-8 are skipped and reported: Stowage never removes what it cannot
///   name exactly.
/// - **Never across a mount**, as `rm --one-file-system`: a mount point inside a location (a bind
///   mount, even of the same device, a tmpfs, an overlay) is neither searched nor taken for a
///   marked item, even when what is mounted there carries the mark; a marked directory holding one
///   goes without it. The mount point is reported (`"PATH: skipped: another file system"`, in
///   ``Scan/skipped`` and ``Report/failures``), and its bytes are not counted in the item's.
public struct MarkedItems: Purging {
    /// The container whose locations are searched.
    public let container: Container
    /// What a purge's `timeLimit` is measured by.
    public let timeLimitClock: any Clock<Duration>

    /// The marked items of `container`'s locations.
    ///
    /// - Parameters:
    ///   - container: The container whose locations are searched.
    ///   - timeLimitClock: What `purge(atLeast:timeLimit:)`'s limit is measured by; default
    ///     `ContinuousClock()`, tests pass a clock they move.
    public init(container: Container, timeLimitClock: any Clock<Duration> = ContinuousClock()) {
        self.container = container
        self.timeLimitClock = timeLimitClock
    }

    /// `"marked items"`.
    public var purgingName: String { "marked items" }

    /// `PurgingTier.markedItems`: after every cache, before the purgeable directories.
    public var purgingTier: PurgingTier { .markedItems }

    /// One marked file or directory.
    public struct Item: Sendable, Hashable, Codable {
        /// The item's path, for people.
        public var path: String
        /// The location it is in.
        public var location: Location
        /// The space removing it gives back (`st_blocks × 512`, a directory's whole tree); nothing
        /// for a file with another hard link, whose blocks stay with that link.
        public var bytes: ByteCount
        /// Its last modification (a directory's: the newest inside it), which orders removal.
        public var modified: Date
        /// Whether it is a directory.
        public var isDirectory: Bool
    }

    /// Every marked item, oldest first, and what could not be examined.
    ///
    /// - Throws: `StowageError` when a location exists but cannot be opened; `CancellationError`.
    public func scan() async throws -> Scan {
        try await walk { try $0.scan() }
    }

    /// Removes marked items, oldest first, until at least `bytes` are freed, or every one when
    /// `bytes` is `nil`.
    ///
    /// - Parameters:
    ///   - bytes: The space to free; `nil` removes every marked item.
    ///   - timeLimit: A time budget from the call, on ``timeLimitClock``: the work stops between
    ///     two entries when it is spent (``Report/reachedTimeLimit``). `nil`: no limit.
    /// - Throws: `StowageError` when a location exists but cannot be opened, or for a time limit
    ///   that is not positive; `CancellationError` (what was removed stays removed). An item
    ///   that cannot be removed is reported in ``Report/failures`` and the next one is tried.
    public func purge(atLeast bytes: ByteCount?, timeLimit: Duration? = nil) async throws -> Report {
        if let timeLimit { try TimeLimitCheck.validate(timeLimit) }
        return try await walk(timeLimit: timeLimit) { try $0.purge(atLeast: bytes) }
    }

    /// Frees at least `request.bytesToFree`, oldest items first. A request for zero frees
    /// nothing: marked items have no limits of their own to apply.
    public func purge(_ request: PurgeRequest) async throws -> ByteCount {
        guard request.bytesToFree > .zero else { return .zero }
        return try await purge(atLeast: request.bytesToFree).bytesFreed
    }
}

extension MarkedItems {
    /// Runs `work` off the cooperative threads; cancelling the task stops the walk between entries.
    private func walk<T: Sendable>(
        timeLimit: Duration? = nil,
        _ work: @escaping @Sendable (MarkedItemsWalk) throws -> T
    ) async throws -> T {
        let cancellation = CancellationFlag(timeLimit: timeLimit, clock: timeLimitClock)
        let walk = MarkedItemsWalk(container: container, cancellation: cancellation)
        return try await withTaskCancellationHandler {
            try await BlockingWork.run { try work(walk) }
        } onCancel: {
            cancellation.cancel()
        }
    }
}

extension MarkedItems {
    /// What ``MarkedItems/scan()`` found.
    public struct Scan: Sendable {
        /// Marked items, oldest first.
        public var items: [Item]
        /// Entries that could not be examined or were skipped, with the reason.
        public var skipped: [String]

        /// The space all marked items take.
        public var bytes: ByteCount { items.reduce(.zero) { $0 + $1.bytes } }
    }

    /// What ``MarkedItems/purge(atLeast:timeLimit:)`` removed.
    public struct Report: Sendable, Codable {
        /// The items removed, oldest first.
        public var removed: [Item]
        /// Space given back: the removed items' bytes.
        public var bytesFreed: ByteCount
        /// Marked items left in place.
        public var remaining: Int
        /// Items that could not be removed or examined, with the reason, and mount points left in
        /// place (`"PATH: skipped: another file system"`).
        public var failures: [String]
        /// Whether the time limit stopped the work: ``remaining`` then counts the marked items
        /// found before it.
        public var reachedTimeLimit = false

        /// Whether nothing failed.
        public var isComplete: Bool { failures.isEmpty }
    }
}
