import Synchronization

/// The writes of a cache with ``DiskCache/Durability/deferred(maximumDelay:)`` durability,
/// held in memory from `set` until their batch commits.
///
/// Readers of the cache look here before the index, so a staged value is visible at once in
/// this process. A flush takes a snapshot, commits it in one transaction, then drops each key
/// whose staged write is still the one it committed (a newer write of the key stays staged).
///
/// The file of a write a flush has taken stays until that flush ends, even when a newer write
/// of the key replaces it: the commit under way may still make the index point at it, and a
/// crash before the newer write commits would otherwise leave a row whose file is gone — the
/// key's previous value, long committed, already removed by that commit. After a successful
/// flush the newer write's own commit returns the file as the one it replaced; after a failed
/// one the flush removes it.
final class DiskCacheStaging: Sendable {
    /// A staged write and its place in the order of writes.
    struct Staged: Sendable {
        var entry: DiskCacheIndex.Entry
        var generation: UInt64
        /// The cache's ``StoreGeneration`` when the write was made: a clear since drops it.
        var storeGeneration: UInt64
    }

    private struct State {
        var staged: [String: Staged] = [:]
        var nextGeneration: UInt64 = 0
        var isFlushScheduled = false
        /// The writes a running flush has taken, by key: their generations.
        var committing: [String: UInt64] = [:]
        /// Bytes of the inline values staged, which the staging holds in memory.
        var inlineBytes = 0
        /// Set by ``seal()``: the cache is closing and takes no more writes.
        var isSealed = false
    }

    /// Staged writes at most before the writer commits them itself: a writer faster than the
    /// commits waits for them (as LevelDB's writers stall on a full memtable) instead of
    /// growing the staging without bound.
    static let writeLimit = 4_096
    /// Bytes of inline values staged at most before the writer commits them itself.
    static let inlineByteLimit = 16 << 20

    private let state = Mutex(State())
    /// The longest time between a write and the commit of its batch.
    let maximumDelay: Duration

    init(maximumDelay: Duration) {
        self.maximumDelay = maximumDelay
    }

    /// Stages `entry` for `key`.
    ///
    /// - Returns: The file of a staged write it replaced, to remove (never committed and not
    ///   being committed, so nobody else points at it), whether the caller must schedule a
    ///   flush, and whether the staging is full (``writeLimit``, ``inlineByteLimit``), so the
    ///   caller must flush now; `nil` once ``seal()`` was called, when nothing is staged.
    func stage(
        _ entry: DiskCacheIndex.Entry,
        forKey key: String,
        storeGeneration: UInt64
    ) -> (replacedFile: String?, schedulesFlush: Bool, isFull: Bool)? {
        state.withLock { state in
            guard !state.isSealed else { return nil }
            let generation = state.nextGeneration
            state.nextGeneration += 1
            let staged = Staged(entry: entry, generation: generation, storeGeneration: storeGeneration)
            let replaced = state.staged.updateValue(staged, forKey: key)
            state.inlineBytes += (entry.inline?.count ?? 0) - (replaced?.entry.inline?.count ?? 0)
            let schedulesFlush = !state.isFlushScheduled
            state.isFlushScheduled = true
            let isFull = state.staged.count >= Self.writeLimit || state.inlineBytes >= Self.inlineByteLimit
            let isCommitting = replaced.map { state.committing[key] == $0.generation } ?? false
            return (isCommitting ? nil : replaced?.entry.file, schedulesFlush, isFull)
        }
    }

    /// Refuses every later ``stage(_:forKey:storeGeneration:)``: `close()` calls it before its
    /// last flush, so that flush's snapshot holds every write that was acknowledged.
    func seal() {
        state.withLock { $0.isSealed = true }
    }

    /// The staged entry for `key`, if any.
    func entry(forKey key: String) -> DiskCacheIndex.Entry? {
        state.withLock { state in state.staged.isEmpty ? nil : state.staged[key]?.entry }
    }

    var isEmpty: Bool { state.withLock { $0.staged.isEmpty } }

    /// Every staged write, to commit, in the order they were made; a flush that runs now covers
    /// them, so a new write schedules another. Their files stay until ``settle(_:committed:)``,
    /// whatever replaces them meanwhile. One flush at a time (the caller holds the cache's flush
    /// lock).
    ///
    /// In the order of the writes, not the dictionary's: SQLite gives new rows ascending rowids,
    /// so the table then keeps rows written together in write order, which is the order of
    /// least recent use until reads move it. An eviction removes the least recently used rows
    /// first, and in write order they fill whole pages of the table. Trimming half of the scale
    /// bench's 10^6 entries, filled through this staging in the dictionary's order, made
    /// 842,147 `pwrite`s in the sqlite3 shell (`strace -c`; batches of 1,024), against 350,532
    /// for the same keys and values of the same schema inserted in write order. With the
    /// trim's own batches and page cache (`DiskCache.trimBatchSize`), the bench's trim used
    /// 2.3 s of CPU instead of 3.4–3.8 s.
    func snapshot() -> [(key: String, staged: Staged)] {
        state.withLock { state in
            state.isFlushScheduled = false
            state.committing = state.staged.mapValues(\.generation)
            return state.staged.map { ($0.key, $0.value) }.sorted { $0.staged.generation < $1.staged.generation }
        }
    }

    /// Ends the flush of `snapshot`: drops its writes that are still staged unchanged.
    ///
    /// - Parameter committed: Whether the flush committed `snapshot`.
    /// - Returns: The files to remove: none after a commit (the index points at them, and the
    ///   writes that replace them will return them when they commit); after a failure, every
    ///   file of `snapshot`, since none of them was committed.
    @discardableResult
    func settle(_ snapshot: [(key: String, staged: Staged)], committed: Bool) -> [String] {
        state.withLock { state in
            state.committing = [:]
            var files: [String] = []
            for (key, staged) in snapshot {
                if !committed, let file = staged.entry.file { files.append(file) }
                guard state.staged[key]?.generation == staged.generation else { continue }
                state.inlineBytes -= staged.entry.inline?.count ?? 0
                state.staged.removeValue(forKey: key)
            }
            return files
        }
    }

    /// How many writes the running flush has taken; 0 between flushes.
    var committingCount: Int { state.withLock { $0.committing.count } }

    /// Drops the writes made before the cache was cleared (at another store generation than
    /// `storeGeneration`); returns their files.
    func dropWrites(notAt storeGeneration: UInt64) -> [String] {
        state.withLock { state in
            var files: [String] = []
            state.staged = state.staged.filter { _, staged in
                if staged.storeGeneration == storeGeneration { return true }
                state.inlineBytes -= staged.entry.inline?.count ?? 0
                if let file = staged.entry.file { files.append(file) }
                return false
            }
            return files
        }
    }

    /// Drops `key`'s staged write if it is the one stored at `modified`; returns its file to
    /// remove (none while a flush is committing it: that flush settles it).
    func discard(key: String, modified: Double) -> String?? {
        state.withLock { state in
            guard let staged = state.staged[key], staged.entry.modified == modified else { return nil }
            state.inlineBytes -= staged.entry.inline?.count ?? 0
            state.staged.removeValue(forKey: key)
            return .some(state.committing[key] == staged.generation ? nil : staged.entry.file)
        }
    }
}
