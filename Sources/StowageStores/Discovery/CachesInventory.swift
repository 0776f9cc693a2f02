import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping

/// What a container's caches location holds, and its purgeable directories: classified once,
/// the same way, for the storage account and for "clear caches".
struct CachesInventory {
    enum Kind: Equatable {
        /// A disk cache marked as an HTTP cache (its layout file).
        case httpCache
        /// Any other disk cache (a directory with a disk-cache index).
        case diskCache
        /// Anything else: files and directories the app keeps in caches itself.
        case loose
    }

    /// One entry of the caches location (not `CACHEDIR.TAG`, not a purgeable directory).
    struct Entry {
        var name: String
        var url: URL
        var kind: Kind
        /// Whether it is a mount point (another file system, or a bind mount of the same one):
        /// always ``Kind/loose``, never measured as the container's (`du -x`).
        var isMounted = false
    }

    /// The registered purgeable directories and where they are.
    var purgeable: [(registration: PurgeableDirectory, url: URL)]
    /// The caches location's entries, by name.
    var entries: [Entry]

    init(container: Container) throws {
        let directories = PurgeableDirectories(container: container)
        purgeable = try directories.registrations().map { ($0, try directories.url(for: $0.path)) }
        let purgeablePaths = Set(purgeable.map(\.url.fileSystemPath))
        let caches = container.url(for: .caches)
        // A tree mounted in the location (even a disk cache) is another file system's: classified
        // as loose, so "clear caches" takes the path that stops at the mount point and names it
        // (FileSystemBoundary), never a cache's removeAll inside it.
        let location = try? OpenDirectory.open(path: caches.fileSystemPath)
        let boundary = location?.effectiveBoundary
        entries = try StoreFiles.names(in: caches).compactMap { name in
            let url = caches.appending(path: name)
            guard name != "CACHEDIR.TAG", !purgeablePaths.contains(url.fileSystemPath) else { return nil }
            let isMounted =
                location.flatMap { FileStatus.at($0.descriptor, name) }.map { !(boundary?.contains($0) ?? true) }
                ?? false
            guard !isMounted, StoreFiles.isDirectory(url), DiskCache.isDiskCache(url) else {
                return Entry(name: name, url: url, kind: .loose, isMounted: isMounted)
            }
            return Entry(name: name, url: url, kind: StoreMarker.isHTTPCache(url) ? .httpCache : .diskCache)
        }
    }
}
