import StowageCore

/// One clean task of a manifest: a directory's entries, or named handlers registered in code.
public enum CleanTask: Sendable, Hashable, CustomStringConvertible {
    /// Deletes `entries` of the container path `path` (sandbox-style, e.g. `Library/Caches/images`);
    /// entries are names or patterns with `*` and `?`. No entries means the whole contents of a
    /// directory, or the file itself when `path` names a file (`PurgeableCache.plist`'s `Path` + `Entries`).
    case path(String, entries: [String])
    /// Calls the handlers registered as `className.selector` for each selector, in order (`PurgeableCache.plist`'s
    /// `Class` + `Selectors`; see ``CleanHandlers``).
    case handler(className: String, selectors: [String])

    /// `"Path 'Library/Caches/images'"` or `"Class 'ImageStore'"`.
    public var description: String {
        switch self {
        case .path(let path, _): "Path \(PathInput.quoted(path))"
        case .handler(let className, _): "Class \(PathInput.quoted(className))"
        }
    }
}
