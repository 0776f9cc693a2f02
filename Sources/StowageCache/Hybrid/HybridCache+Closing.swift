extension HybridCache {
    /// Closes the disk level (`DiskCache.close()`): staged writes and access times are
    /// committed, and later operations that reach the disk throw `StowageError` `.closed`. The
    /// hybrid cache owns the disk cache it was given; close that one only through here.
    /// ``run()`` calls it when its service group shuts down gracefully.
    public func close() async throws {
        try await disk.close()
    }

    /// The synchronous overload of `close()`: the same work on the calling thread.
    public func close() throws {
        try disk.close()
    }
}
