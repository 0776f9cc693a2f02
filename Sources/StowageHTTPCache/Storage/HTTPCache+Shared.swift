import Foundation
import Synchronization

extension HTTPCache {
    /// The cache ``shared`` holds: made on first use unless set before.
    private static let sharedSlot = Mutex<HTTPCache?>(nil)

    /// The process-wide cache, as `URLCache.shared` is: what `CachingHTTPClient` uses when it
    /// is given no cache.
    ///
    /// By default it is a cache in memory only (``Mode/memoryOnly``, the default
    /// ``Configuration``: 2 MB of memory, no directory), made on first use: a process-wide
    /// default cannot choose a directory for the app, so it writes nothing to the file system.
    /// (`URLCache.shared` on Apple platforms also keeps a disk tier in the app's Caches
    /// directory; give one with a cache of your own.)
    ///
    /// The contract:
    /// - Set it once at launch, before the first client is created, to give the process a
    ///   cache of your own (with a directory, other capacities, or disabled):
    ///   ```swift
    ///   HTTPCache.shared = try await HTTPCache.open(directory: caches.appending(path: "http"))
    ///   ```
    /// - Reading and setting it are safe from any thread or task (a lock guards it); every
    ///   read after a set returns the new cache.
    /// - Setting it later is allowed: what already holds the previous cache keeps it (a
    ///   `CachingHTTPClient` takes the shared cache when it is created, as a `URLSession` keeps its
    ///   configuration's `urlCache`), and the previous cache lives until its last holder lets
    ///   it go. Responses stored in it are not moved.
    public static var shared: HTTPCache {
        get {
            sharedSlot.withLock { slot in
                if let slot { return slot }
                let made = makeDefaultShared()
                slot = made
                return made
            }
        }
        set {
            sharedSlot.withLock { $0 = newValue }
        }
    }

    /// A memory-only cache with the default configuration, as `URLCache.shared`'s default keeps
    /// responses in memory without a directory of the app's choosing.
    private static func makeDefaultShared() -> HTTPCache {
        do {
            return try HTTPCache(directory: nil, configuration: Configuration())
        } catch {
            // The default configuration is valid and a memory-only cache opens no file.
            preconditionFailure("the default memory-only HTTP cache could not be made: \(error)")
        }
    }
}
