import StowageCache

extension HTTPCache {
    /// Closes the cache's disk level (`DiskCache.close()`): what is pending is
    /// committed, and later lookups and stores that reach the disk throw `StowageError`
    /// `.closed`. Without a disk level (``mode`` in memory) this does nothing.
    /// ``run()`` calls it when its service group shuts down gracefully.
    public func close() async throws {
        try await disk?.close()
    }

    /// The synchronous overload of `close()`: the same work on the calling thread.
    public func close() throws {
        try disk?.close()
    }
}
