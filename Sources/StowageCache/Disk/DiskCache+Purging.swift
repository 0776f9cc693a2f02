import StowageCore

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

    /// ``purge(_:)``, naming the mount points in the cache's directory (`data/`, `tmp/` or a
    /// hash subdirectory of another file system or mount), whose files the purge left in place
    /// as `removeAll()` does, so that a `StorageMonitor` lists them in its report.
    public func purgeNamingSkips(_ request: PurgeRequest) async throws -> PurgeOutcome {
        let freed = try await purge(request)
        let mounts = await BlockingWork.run { self.files.mountPoints() }
        return PurgeOutcome(
            bytesFreed: freed,
            skipped: mounts.map { ClearReport.Failure(path: $0, message: FileSystemBoundary.skipMessage) }
        )
    }
}
