/// Which levels of a ``HybridCache`` a write stores in, or a removal removes from.
///
/// ```swift
/// // A preview that is cheap to recompute: keep it in memory, never write it to disk
/// // (SDImageCache's `storeImage:forKey:toDisk:NO`).
/// try await cache.setValue(preview, forKey: key, placement: .memoryOnly)
/// // Give memory back without losing the disk copy.
/// try await cache.removeValue(forKey: key, from: .memoryOnly)
/// ```
public enum CachePlacement: Sendable, Hashable, CustomStringConvertible {
    /// Memory and disk, and the shared level when there is one: write-through, and removal
    /// everywhere. The default.
    case all
    /// Memory only.
    ///
    /// A write keeps the value in memory and removes the key's older copies from disk and the
    /// shared level, so that they are not served once memory lets the new value go; it takes no
    /// tag (tags live in the disk index). A removal
    /// drops the memory copy; the disk copy stays and is read (and promoted) on the next read.
    case memoryOnly
    /// Disk only (and the shared level for a write).
    ///
    /// A write stores the value on disk (and in the shared level) and drops the key's older
    /// memory copy; the next read decodes the disk copy. A removal removes the disk copy; a
    /// memory copy stays until it is evicted or removed, and the shared level is left alone.
    case diskOnly

    /// The placement's name: `all`, `memoryOnly` or `diskOnly`.
    public var description: String {
        switch self {
        case .all: "all"
        case .memoryOnly: "memoryOnly"
        case .diskOnly: "diskOnly"
        }
    }

    /// Whether a write with this placement keeps the value in memory.
    var keepsInMemory: Bool { self != .diskOnly }
}
