import StowageCore

/// Something that can give space back when the volume runs short: what a ``StorageMonitor``
/// calls after the purge sweep.
public protocol Purging: Sendable {
    /// A name for reports and logs, e.g. the cache's name.
    var purgingName: String { get }

    /// Frees what it can without losing anything that cannot be regenerated.
    ///
    /// - Returns: The bytes freed.
    func purge() async throws -> ByteCount
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
