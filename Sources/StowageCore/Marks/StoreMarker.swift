import Foundation

/// Files that say which kind of store a directory holds, so the storage account and "clear
/// caches" can tell stores apart by looking, without linking the modules that write them.
///
/// A plain disk cache is known by its index; an HTTP cache is a disk cache that also holds
/// ``httpCacheFileName``, which `HTTPCache` writes when it opens a directory (with its layout
/// version inside).
public enum StoreMarker {
    /// The file that marks an HTTP cache's directory: `.stowage-http-cache`.
    public static let httpCacheFileName = ".stowage-http-cache"

    /// Whether `directory` holds an HTTP cache's marker: a regular file, as `HTTPCache` writes
    /// it. A directory, FIFO or symbolic link of that name marks nothing (a link is not followed
    /// out of the directory).
    public static func isHTTPCache(_ directory: URL) -> Bool {
        FileStatus.of(directory.appending(path: httpCacheFileName).fileSystemPath)?.type == .regular
    }
}
