import Foundation
import StowageCore
import Synchronization

extension DiskCache {
    /// The value of `key` when the index alone holds it whole and sound, read on the calling
    /// thread without ever waiting: for a caller that must not suspend or block on anything but
    /// one indexed `SELECT` (a server's event loop answering a hit, as nginx reads a cached file
    /// on the worker that accepted the request unless `aio` is set).
    ///
    /// A hit is counted and its access time recorded as any read's. Everything else is `nil`
    /// and counted nowhere, for the caller's ordinary read (``storedData(forKey:)``) to answer
    /// and count: a miss, an expired entry, a value in a file (a read of unbounded length), an
    /// inline value that fails its checks (its removal is a write), a failing index (whose
    /// recovery may rebuild it), an index whose log another connection holds locked (a WAL
    /// recovery after a crash, in this process or another: SQLite's readers wait that out for
    /// up to 30 s), and an index held in exclusive locking mode (read through GRDB's queue,
    /// behind writes).
    package func indexedValueWithoutWaiting(forKey key: String) -> StoredData? {
        guard lifecycle.load(ordering: .acquiring) == Lifecycle.open, index.reader != nil,
            !Self.containsNUL(key), !StoreGeneration.isRetired(followGeneration()),
            !storeGeneration.isRetired
        else { return nil }
        let entry: DiskCacheIndex.Entry?
        if let staged = staging?.entry(forKey: key) {
            entry = staged
        } else {
            entry = try? index.entryWithoutWaiting(forKey: key)
        }
        let now = configuration.clock.now().timeIntervalSince1970
        guard let entry, !isExpired(entry, key: key, now: now), let value = Self.soundInlineValue(of: entry) else {
            return nil
        }
        return hit(key: key, value: value, entry: entry, now: now)
    }
}
