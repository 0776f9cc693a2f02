import Foundation
import Logging
import StowageCore

extension DiskCache {
    /// How a ``DiskCache`` limits itself and where it keeps its values.
    ///
    /// ```swift
    /// var configuration = DiskCache.Configuration(name: "images")
    /// configuration.sizeLimit = ByteCount(200_000_000)   // 200 MB, trimmed back to 100 MB
    /// configuration.maximumAge = .seconds(7 * 24 * 3600)  // a week since last access
    /// let cache = try DiskCache(directory: cachesURL.appending(path: "images"), configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// A name for logs and metrics (the `cache` dimension).
        public var name: String
        /// The most bytes the cache keeps, counted as ``sizeAccounting`` says and enforced as
        /// ``sizeLimitEnforcement`` says; `nil` for no limit. Default: 150 MB.
        public var sizeLimit: ByteCount?
        /// What ``sizeLimit`` counts. Default ``SizeAccounting/logical``.
        public var sizeAccounting: SizeAccounting
        /// When ``sizeLimit`` is enforced. Default ``SizeLimitEnforcement/trimAfterWrite``.
        public var sizeLimitEnforcement: SizeLimitEnforcement
        /// Whether a value stored as a file is first checked against the volume's capacity for
        /// important usage, so that one larger than the free space is refused with `.noSpace`
        /// before any byte is written (one `statvfs`, only for values over
        /// ``inlineThreshold``). Default `true`.
        public var checksVolumeCapacity: Bool
        /// Apple's storage guide's "clean old entries before adding": before an important write,
        /// when the volume's space for important data would fall under this, the cache first
        /// removes its own least recently used entries until it would not (or it is empty). One
        /// `statvfs` per write while set. Default `nil`: no floor.
        public var freeSpaceFloor: ByteCount?
        /// The most entries the cache keeps; `nil` (the default) for no limit.
        public var countLimit: Int?
        /// Entries older than this, by ``ageBasis``, are removed; `nil` (the default) for no
        /// limit. SDWebImage's `maxCacheAge` is one week (``imageCache(name:sizeLimit:)``).
        public var maximumAge: Duration?
        /// Which date ``maximumAge`` is measured from. Default: ``AgeBasis/accessed``.
        public var ageBasis: AgeBasis
        /// The time-to-live of values stored without one; `nil` (the default) for values that
        /// live until a limit removes them.
        public var defaultTimeToLive: Duration?
        /// When a limit is exceeded, least-recently-used entries are removed until size and count
        /// are at this fraction of their limits. Default `0.5`, as `SDImageCache` trims to half of
        /// `maxDiskSize`; must be in `0...1`.
        public var trimRatio: Double
        /// Values of at most this many bytes live inside the index (one SQLite row, no file);
        /// larger ones are files. Default 16 KiB (see `Benchmarks/README.md`).
        public var inlineThreshold: Int
        /// What a write has survived when it returns; see ``Durability``. Default
        /// ``Durability/processCrash``.
        public var durability: Durability
        /// Whether each write is flushed to stable storage before it returns: shorthand for
        /// ``durability`` ``Durability/powerLoss`` (`true`) or ``Durability/processCrash``
        /// (`false`).
        public var synchronousWrites: Bool {
            get { durability == .powerLoss }
            set { durability = newValue ? .powerLoss : .processCrash }
        }
        /// What to do when the index is not a readable SQLite database. Default
        /// ``CorruptIndexPolicy/rebuild``.
        public var corruptIndexPolicy: CorruptIndexPolicy
        /// How precisely reads keep access times: a read records its time only when
        /// the entry's recorded access is at least this old, the way Linux's `relatime` skips
        /// most atime writes. Least-recently-used order and ``AgeBasis/accessed`` ages are then
        /// exact to this resolution, and a cache that is read far more often than it changes does
        /// not rewrite its index for its readers. Default 60 s; `.zero` records every read. A
        /// ``maximumAge`` shorter than 16 resolutions narrows it to a sixteenth of that age.
        public var accessTimeResolution: Duration
        /// The clock behind dates, expiry and age. Tests pass a clock they advance by hand.
        public var clock: CacheClock
        /// What ``Durability/deferred(maximumDelay:)``'s delay between a write and the commit
        /// of its batch is measured by. Default `ContinuousClock()`; tests pass a clock they
        /// advance.
        public var deferredCommitClock: any Clock<Duration>
        /// Where the cache logs recoveries and failed background work.
        public var logger: Logger
        /// The most page cache each connection to the index keeps (SQLite's `cache_size`);
        /// `nil`, SQLite's default of 2 MiB (2,048,000 bytes). A cache with a memory level in front
        /// of it (an `HTTPCache`) reads the index far less than it writes it, and the writer's page
        /// cache alone then fills those 2 MiB.
        package var indexPageCacheSize: ByteCount?

        /// A configuration with the defaults above.
        ///
        /// - Parameter name: A name for logs and metrics.
        public init(name: String = "disk") {
            self.name = name
            self.sizeLimit = ByteCount(150_000_000)
            self.sizeAccounting = .logical
            self.sizeLimitEnforcement = .trimAfterWrite
            self.checksVolumeCapacity = true
            self.freeSpaceFloor = nil
            self.countLimit = nil
            self.maximumAge = nil
            self.ageBasis = .accessed
            self.defaultTimeToLive = nil
            self.trimRatio = 0.5
            self.inlineThreshold = 16 * 1024
            self.durability = .processCrash
            self.corruptIndexPolicy = .rebuild
            self.accessTimeResolution = .seconds(60)
            self.clock = .system
            self.deferredCommitClock = ContinuousClock()
            self.logger = Logger(label: "org.stowage.disk-cache", factory: SwiftLogNoOpLogHandler.init)
            self.indexPageCacheSize = nil
        }

        /// ``accessTimeResolution``, narrowed to a sixteenth of a short ``maximumAge``.
        var effectiveAccessTimeResolution: TimeInterval {
            let resolution = accessTimeResolution.timeInterval
            return min(resolution, maximumAge.map { $0.timeInterval / 16 } ?? resolution)
        }

        func validate() throws {
            if let sizeLimit, sizeLimit.rawValue <= 0 {
                throw StowageError.invalidConfiguration(
                    "the disk cache's sizeLimit must be positive or nil, not \(sizeLimit)"
                )
            }
            if let freeSpaceFloor, freeSpaceFloor.rawValue < 0 {
                throw StowageError.invalidConfiguration(
                    "the disk cache's freeSpaceFloor must be zero or more, or nil, not \(freeSpaceFloor)"
                )
            }
            if let countLimit, countLimit <= 0 {
                throw StowageError.invalidConfiguration(
                    "the disk cache's countLimit must be positive or nil, not \(countLimit)"
                )
            }
            if let maximumAge, !(maximumAge > .zero) {
                throw StowageError.invalidConfiguration(
                    "the disk cache's maximumAge must be more than zero or nil, not \(maximumAge)"
                )
            }
            if let defaultTimeToLive, !(defaultTimeToLive > .zero) {
                throw StowageError.invalidConfiguration(
                    "the disk cache's defaultTimeToLive must be more than zero or nil, not \(defaultTimeToLive)"
                )
            }
            guard (0...1).contains(trimRatio) else {
                throw StowageError.invalidConfiguration(
                    "the disk cache's trimRatio must be between 0 and 1, not \(trimRatio)"
                )
            }
            if case .deferred(let maximumDelay) = durability, !(maximumDelay > .zero && maximumDelay <= .seconds(60)) {
                throw StowageError.invalidConfiguration(
                    "the disk cache's deferred durability needs a maximumDelay between 0 and 60 seconds, not \(maximumDelay)"
                )
            }
            guard accessTimeResolution >= .zero else {
                throw StowageError.invalidConfiguration(
                    "the disk cache's accessTimeResolution must be zero or more, not \(accessTimeResolution)"
                )
            }
            guard inlineThreshold >= 0 else {
                throw StowageError.invalidConfiguration("the disk cache's inlineThreshold must not be negative")
            }
        }
    }

    /// What a disk cache's ``Configuration/sizeLimit`` counts.
    public enum SizeAccounting: Sendable, Hashable {
        /// The values' lengths.
        case logical
        /// The space the values take: a file value counts its size rounded up to 4 KiB blocks
        /// (the block of ext4, XFS and APFS; what `SDImageCache` adds up from
        /// `NSURLTotalFileAllocatedSizeKey`), an inline value its length (it shares the index's pages).
        case allocated
    }

    /// When a disk cache enforces its ``Configuration/sizeLimit``.
    public enum SizeLimitEnforcement: Sendable, Hashable {
        /// A write that takes the cache over the limit begins a cull down to
        /// ``Configuration/trimRatio`` of it, spread over the writes as python-diskcache's
        /// `cull` is: that write and the following ones each remove, in their own transaction, up
        /// to 64 least-recently-used entries more than they store, until the target is reached.
        /// A write that goes further over than that (a large value over many small ones) also
        /// schedules a background trim, and the cache can be over its limit until it has run.
        /// Another process's write over the limit culls in that process.
        case trimAfterWrite
        /// The transaction that stores a value first evicts least-recently-used entries (down to
        /// ``Configuration/trimRatio`` of the limit), so the committed size never passes the
        /// limit, whichever process writes. A value that cannot fit even in an empty cache is
        /// refused with `.noSpace` before any byte is written.
        case hard
    }

    /// The date an entry's age is measured from.
    public enum AgeBasis: String, Sendable, Hashable, Codable {
        /// The last read or write (least recently used goes first).
        case accessed
        /// The last write.
        case modified
        /// The first write of the key.
        case created
    }

    /// What the cache does when its index is damaged: a schema that lacks a table, column or
    /// trigger of its format (a dropped table, a `user_version` reset to 0), found at open; or a
    /// page that does not read back, found by the whole-file check (`PRAGMA quick_check`) the
    /// maintenance lane runs after each open, or by the first read or write that meets it.
    public enum CorruptIndexPolicy: Sendable, Hashable {
        /// Log a warning, empty the cache and start a fresh index: a cache can always be
        /// refilled. Only done when no other handle or process has the cache open. The value
        /// files go too: their names hash the keys one way, so only the index can tell whose
        /// they are. A read or write that met the damage then runs on the fresh index.
        case rebuild
        /// Throw `StowageError` with code `.corrupt` (from the open, or from each operation that
        /// meets the damage) and leave the files for inspection.
        case fail
    }
}
