import Foundation
import StowageCache
import StowageCore

extension HTTPCache {
    /// The file that marks a directory as an HTTP cache and records its layout version: how
    /// records and bodies sit in the disk cache. Reports tell HTTP caches from other disk caches
    /// by it; a layout newer than this code knows is refused, never misread.
    public static let layoutFileName = StoreMarker.httpCacheFileName

    /// The layout this code writes.
    static let layoutVersion = 1

    /// Writes the marker in a new cache; refuses a newer layout.
    ///
    /// - Throws: `StowageError` `.unsupported` for a newer layout, `.corrupt` for a marker
    ///   that is not a version number.
    static func checkLayout(in directory: URL) throws {
        let url = directory.appending(path: layoutFileName)
        guard let data = try? Data(contentsOf: url) else {
            try AtomicFile.write(Array("\(layoutVersion)\n".utf8), to: url, permissions: 0o644)
            return
        }
        guard let version = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw StowageError(
                code: .corrupt,
                message: "\(url.fileSystemPath) does not hold a layout version; delete the HTTP cache directory",
                path: url.fileSystemPath
            )
        }
        guard version <= layoutVersion else {
            throw StowageError(
                code: .unsupported,
                message: "the HTTP cache at \(directory.fileSystemPath) has layout \(version), newer than this "
                    + "Stowage's \(layoutVersion); open it with the newer version, or give this one another directory",
                path: url.fileSystemPath
            )
        }
    }
}

extension HTTPCache: Purging {
    /// The cache's name.
    public var purgingName: String { configuration.name }

    /// HTTP responses go before other caches: the network has them all.
    public var purgingTier: PurgingTier { .refetchable }

    /// Trims the disk tier now (expired entries, then least recently used down to its target,
    /// and below it until `request.bytesToFree` bytes are gone), then empties the memory tier.
    ///
    /// Disk first, as `CacheLevels` orders every removal: memory emptied first would let a
    /// read in between promote a disk copy the trim is about to remove, and that copy would
    /// then outlive it in memory. Emptying memory counts as a removal, so a read begun before
    /// keeps nothing it found on disk.
    ///
    /// - Returns: The bytes freed on disk; without a disk tier, the bytes the memory tier held.
    public func purge(_ request: PurgeRequest) async throws -> ByteCount {
        guard let disk else {
            let inMemory = memory.totalCost
            levels.dropMemory()
            return ByteCount(inMemory)
        }
        defer { levels.dropMemory() }
        return try await disk.purge(request)
    }
}
