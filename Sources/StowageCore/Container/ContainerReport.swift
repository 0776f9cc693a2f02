import Foundation

/// Everything `stowage report` shows about a container: each location with its size and marks,
/// and the capacity of the volumes they are on.
public struct ContainerReport: Sendable, Hashable, Codable {
    /// The container's identifier.
    public var identifier: String
    /// The rooted container's root, or `nil` for a platform container.
    public var root: String?
    /// One entry per location, in `Location/allCases` order.
    public var locations: [LocationReport]
    /// What a backup would copy and skip, and the large files it would copy.
    public var backupAudit: BackupAudit

    /// One location of the report.
    public struct LocationReport: Sendable, Hashable, Codable {
        /// Which location.
        public var location: Location
        /// Its directory.
        public var path: String
        /// Whether backups should include it (the location's meaning, see ``Location/isBackedUp``).
        public var isBackedUp: Bool
        /// When it may be purged.
        public var purgePolicy: Location.PurgePolicy
        /// Its disk usage (allocated as `du -s -B1`, logical, counts).
        public var usage: DiskUsage.Totals
        /// Entries that could not be measured.
        public var issues: [DiskUsage.Issue]
        /// `user.xdg.robots.backup` = `false` on the directory.
        public var excludedFromBackup: MarkStatus
        /// Stowage's purgeable mark on the directory.
        public var purgeable: MarkStatus
        /// Whether a valid `CACHEDIR.TAG` is in the directory.
        public var hasCacheDirectoryTag: Bool
        /// The capacity of the volume holding the directory.
        public var capacity: VolumeCapacity
    }

    /// The state of a mark as read from the file system.
    public enum MarkStatus: String, Sendable, Hashable, Codable {
        /// The mark is set.
        case set
        /// The mark is not set.
        case unset
        /// The file system has no extended attributes, so the mark cannot exist.
        case unsupported
    }
}

extension Container {
    /// Measures every location, creating the missing ones with their marks first (first use),
    /// and audits what a backup would copy (see ``BackupAudit``).
    ///
    /// - Parameters:
    ///   - reserves: The reserves behind the important and opportunistic capacities.
    ///   - backupAudit: The backup audit's thresholds; Apple's storage guide's 10 MB for large
    ///     files and 100 MB for the warning by default.
    /// - Throws: ``StowageError`` when a location cannot be created or examined, or with code
    ///   `.invalidArgument` for a negative audit threshold.
    public func report(
        reserves: VolumeCapacity.Reserves = VolumeCapacity.Reserves(),
        backupAudit: BackupAudit.Configuration = BackupAudit.Configuration()
    ) async throws -> ContainerReport {
        try backupAudit.validate()
        var locations: [ContainerReport.LocationReport] = []
        for location in Location.allCases {
            let url = try await directory(for: location)
            // `du -x`: a mount inside a location is not the location's, and no clear or purge
            // removes it, so its bytes are not counted as the location's.
            let usage = try await DiskUsage.measure(url, options: DiskUsage.Options(staysOnFileSystem: true))
            locations.append(
                ContainerReport.LocationReport(
                    location: location,
                    path: url.fileSystemPath,
                    isBackedUp: location.isBackedUp,
                    purgePolicy: location.purgePolicy,
                    usage: usage.totals,
                    issues: usage.issues,
                    excludedFromBackup: try Self.status { try Marks.isExcludedFromBackup(url) },
                    purgeable: try Self.status { try Marks.isPurgeable(url) },
                    hasCacheDirectoryTag: CacheDirectoryTag.isPresent(in: url),
                    capacity: try await VolumeCapacity.forVolume(containing: url, reserves: reserves)
                )
            )
        }
        return ContainerReport(
            identifier: identifier,
            root: root?.fileSystemPath,
            locations: locations,
            backupAudit: try await auditBackups(configuration: backupAudit)
        )
    }

    private static func status(_ read: () throws -> Bool) throws -> ContainerReport.MarkStatus {
        do {
            return try read() ? .set : .unset
        } catch StowageError.Code.unsupported {
            return .unsupported
        }
    }

    /// Empties `location`, keeping the directory and its `CACHEDIR.TAG`.
    ///
    /// - Returns: What was removed and freed; see `DirectoryClearing/clearContents(of:keeping:)`.
    public func clear(_ location: Location) async throws -> ClearReport {
        let url = try await directory(for: location)
        let cancellation = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await BlockingWork.run {
                guard let descriptor = try openLocationDirectory(location, creating: true) else {
                    return ClearReport(path: url.fileSystemPath)
                }
                return try DirectoryClearing.clearContents(
                    ofOpenDirectory: descriptor,
                    path: url.fileSystemPath,
                    keeping: [CacheDirectoryTag.fileName],
                    cancellation: cancellation
                )
            }
        } onCancel: {
            cancellation.cancel()
        }
    }
}
