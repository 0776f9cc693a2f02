import Foundation
import StowageCore

/// One caching proxy per cache directory: `proxy.lock` in the directory, held exclusively for the
/// proxy's life.
///
/// Each proxy keeps responses in its own memory level above the directory's disk cache, and a
/// purge reaches the memory of the process that takes it and the disk both share, not the other
/// process's memory: a second proxy on the directory would serve what a purge through the first
/// removed, for as long as it kept it. (nginx keeps a cache's keys in one instance's shared
/// memory, `keys_zone`, and asks every zone for a path of its own.) Proxies that share their caches
/// do it through the shared level (`--shared redis://…`), which carries purges to every node. The
/// lock is `flock(2)` (``LockFile``), so it is released when the proxy's process ends, however it
/// ends.
enum CacheDirectoryClaim {
    /// The lock file's name in the cache directory.
    static let fileName = "proxy.lock"

    /// Claims `directory` for this proxy, creating it (`0700`) when missing.
    ///
    /// - Returns: The held lock: the claim lasts as long as it does.
    /// - Throws: `StowageError` `.busy` when another proxy holds the directory; what creating
    ///   the directory or opening the lock file throws.
    static func claim(_ directory: URL) throws -> LockFile {
        let path = try directory.checkedFileSystemPath(subject: "the proxy's cache directory")
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw StowageError(
                code: .ioError,
                message: "could not create the proxy's cache directory \(path): \(error.localizedDescription)",
                path: path
            )
        }
        let lockPath = (path.hasSuffix("/") ? path : path + "/") + fileName
        let lock = try LockFile(path: lockPath)
        guard try lock.tryLock(.exclusive) else {
            throw StowageError(
                code: .busy,
                message: """
                    another caching proxy serves from the cache directory \(path) (it holds \(lockPath)): \
                    a purge through one would not reach the responses the other keeps in memory. Give each \
                    proxy its own cache directory (--cache-dir), or let proxies share their caches through \
                    the shared level (--shared redis://…)
                    """,
                path: path
            )
        }
        return lock
    }
}
