import StowageCore

// Clears and removals made by other handles: see ``StoreGeneration``.

extension DiskCache {
    /// The cache's generation now, after dropping staged writes made before a clear when it
    /// moved since this handle last looked.
    @inline(__always)
    func followGeneration() -> UInt64 {
        generationWatch.check {
            guard let staging else { return }
            files.remove(staging.dropWrites(notAt: storeGeneration.value))
        }
    }

    /// Whether the cache's directory was removed (a user wipe, a cleaner): the handle then
    /// reads nothing and refuses writes.
    public var isRemoved: Bool { storeGeneration.isRetired }

    /// The error of an operation on a removed cache.
    func removedError() -> StowageError {
        StowageError(
            code: .notFound,
            message: """
                the disk cache '\(configuration.name)' was removed (its directory was wiped or cleaned away) \
                while open; open it again to store values there
                """,
            path: directory.fileSystemPath
        )
    }
}
