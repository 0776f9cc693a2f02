/// What a backup of a container would take, and what would be worth excluding from it.
///
/// Apple's storage guide ("Audit Backup Size") measures what is backed up, warns above
/// 100 MB, and lists files over 10 MB that are not excluded from backup: those are the
/// re-downloadable files an app forgot to mark. The audit does the same for every location of
/// a container, with the marks backup tools read on Linux:
///
/// - A location whose meaning is "not backed up" (caches, temporary; see ``Location/isBackedUp``)
///   is excluded as a whole.
/// - A file or directory with `user.xdg.robots.backup` = `false` (``Marks/setExcludedFromBackup(_:at:)``)
///   is excluded, with everything under it.
/// - A directory holding a valid `CACHEDIR.TAG` (``CacheDirectoryTag``) is excluded, with
///   everything under it, as `tar --exclude-caches-all`, borg and restic skip it.
///
/// Sizes are allocated bytes, as ``DiskUsage`` and `du -s -B1` count them, so a location's
/// ``LocationAudit/backedUp`` and ``LocationAudit/excluded`` add up to its usage. Hard links are
/// counted once per location, where the walk first meets them; symbolic links are counted as
/// links and never followed; FIFOs, sockets and devices are counted, never opened. The walk
/// stays on each location's file system, as `du -x` (and the container report's usage) does:
/// a mount inside a location (another file system, or a bind mount of the same one) is neither
/// counted nor entered: it is another file system's, which its own backup (or a backup tool's
/// `--one-file-system`) decides about.
///
/// ```swift
/// let report = try await container.report()
/// if let warning = report.backupAudit.warning { print(warning) }
/// for file in report.backupAudit.largeFiles { print(file.path, file.allocatedBytes.formatted(.compact)) }
/// ```
public struct BackupAudit: Sendable, Hashable, Codable {
    /// The thresholds the audit was made with.
    public var configuration: Configuration
    /// One entry per location, in `Location.allCases` order.
    public var locations: [LocationAudit]
    /// The files over ``Configuration/largeFileThreshold`` that are not excluded from backup,
    /// largest first (then by path), at most ``Configuration/maximumListedFiles`` of them.
    public var largeFiles: [LargeFile]
    /// How many files are over the threshold and not excluded, including those not listed.
    public var largeFileCount: Int

    /// The thresholds of an audit.
    public struct Configuration: Sendable, Hashable, Codable {
        /// A file whose allocated size is strictly above this, and that is not excluded, is
        /// listed in ``BackupAudit/largeFiles``. Default 10 MB (10,000,000 bytes), the figure of
        /// Apple's storage guide.
        public var largeFileThreshold: ByteCount
        /// ``BackupAudit/warning`` is set when ``BackupAudit/backedUpBytes`` is strictly above
        /// this. Default 100 MB (100,000,000 bytes), the figure of Apple's storage guide.
        public var warningThreshold: ByteCount
        /// The most large files listed. Default 20.
        public var maximumListedFiles: Int

        /// Creates a configuration; the defaults are Apple's storage guide's figures.
        public init(
            largeFileThreshold: ByteCount = ByteCount(10_000_000),
            warningThreshold: ByteCount = ByteCount(100_000_000),
            maximumListedFiles: Int = 20
        ) {
            self.largeFileThreshold = largeFileThreshold
            self.warningThreshold = warningThreshold
            self.maximumListedFiles = maximumListedFiles
        }

        /// Refuses negative thresholds and a negative listing limit.
        package func validate() throws {
            for (name, value) in [
                ("large-file threshold", largeFileThreshold), ("warning threshold", warningThreshold),
            ]
            where value.rawValue < 0 {
                throw StowageError.invalidArgument(
                    "cannot audit backups with a \(name) of \(value.rawValue) bytes: it must be ≥ 0 (0 lists every file)"
                )
            }
            guard maximumListedFiles >= 0 else {
                throw StowageError.invalidArgument(
                    "cannot list \(maximumListedFiles) large files: the limit must be ≥ 0 (0 lists none, the count remains)"
                )
            }
        }
    }

    /// The backup figures of one location.
    public struct LocationAudit: Sendable, Hashable, Codable {
        /// Which location.
        public var location: Location
        /// Whether the whole location is excluded: by its meaning, its mark or a `CACHEDIR.TAG`.
        public var isExcluded: Bool
        /// What a backup would copy: every entry not excluded, the location's directory included.
        public var backedUp: DiskUsage.Totals
        /// What a backup would skip: excluded entries and everything under them.
        public var excluded: DiskUsage.Totals
        /// Entries that could not be read; they are missing from both totals.
        public var issues: [DiskUsage.Issue]
    }

    /// A large file that a backup would copy.
    public struct LargeFile: Sendable, Hashable, Codable {
        /// The location the file is in.
        public var location: Location
        /// The path relative to the container: below the root for a rooted container
        /// (`Documents/video.mov`); the absolute path for a platform container, whose locations
        /// are separate trees.
        public var path: String
        /// `st_blocks × 512`, what the threshold is compared with.
        public var allocatedBytes: ByteCount
        /// `st_size`.
        public var logicalBytes: ByteCount
    }

    /// What a backup would copy, all locations together (allocated bytes).
    public var backedUpBytes: ByteCount {
        ByteCount(locations.reduce(Int64(0)) { $0 + $1.backedUp.allocatedBytes.rawValue })
    }

    /// What a backup would skip, all locations together (allocated bytes).
    public var excludedBytes: ByteCount {
        ByteCount(locations.reduce(Int64(0)) { $0 + $1.excluded.allocatedBytes.rawValue })
    }

    /// Whether ``backedUpBytes`` is above ``Configuration/warningThreshold``.
    public var isOverWarningThreshold: Bool { backedUpBytes > configuration.warningThreshold }

    /// A sentence for people when the backup is over the warning threshold, `nil` otherwise.
    public var warning: String? {
        guard isOverWarningThreshold else { return nil }
        return "a backup of this container would copy \(backedUpBytes.formatted(.compact)), over the "
            + "\(configuration.warningThreshold.formatted(.compact)) warning threshold: move re-downloadable files "
            + "to caches or exclude them from backup (user.xdg.robots.backup=false, Marks.setExcludedFromBackup)"
    }

    private enum CodingKeys: String, CodingKey {
        case configuration, locations, largeFiles, largeFileCount
        case backedUpBytes, excludedBytes, isOverWarningThreshold, warning
    }

    /// Encodes the stored fields and the derived totals and warning, so JSON readers get them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(configuration, forKey: .configuration)
        try container.encode(locations, forKey: .locations)
        try container.encode(largeFiles, forKey: .largeFiles)
        try container.encode(largeFileCount, forKey: .largeFileCount)
        try container.encode(backedUpBytes, forKey: .backedUpBytes)
        try container.encode(excludedBytes, forKey: .excludedBytes)
        try container.encode(isOverWarningThreshold, forKey: .isOverWarningThreshold)
        try container.encodeIfPresent(warning, forKey: .warning)
    }

    /// Decodes the stored fields; the derived ones are recomputed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        configuration = try container.decode(Configuration.self, forKey: .configuration)
        locations = try container.decode([LocationAudit].self, forKey: .locations)
        largeFiles = try container.decode([LargeFile].self, forKey: .largeFiles)
        largeFileCount = try container.decode(Int.self, forKey: .largeFileCount)
    }

    package init(configuration: Configuration, locations: [LocationAudit], largeFiles: [LargeFile], largeFileCount: Int)
    {
        self.configuration = configuration
        self.locations = locations
        self.largeFiles = largeFiles
        self.largeFileCount = largeFileCount
    }
}
