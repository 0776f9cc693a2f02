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
}
