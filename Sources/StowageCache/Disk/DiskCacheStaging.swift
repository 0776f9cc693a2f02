import Synchronization

/// The writes of a cache with ``DiskCache/Durability/deferred(maximumDelay:)`` durability,
/// held in memory from `set` until their batch commits.
///
/// Readers of the cache look here before the index, so a staged value is visible at once in
/// this process. A flush takes a snapshot, commits it in one transaction, then drops each key
/// whose staged write is still the one it committed (a newer write of the key stays staged).
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
        /// Bytes of the inline values staged, which the staging holds in memory.
        var inlineBytes = 0
    }

    /// Staged writes at most before the writer commits them itself: a writer faster than the
    /// commits waits for them (as LevelDB's writers stall on a full memtable) instead of
    /// growing the staging without bound.
    static let writeLimit = 4_096
    /// Bytes of inline values staged at most before the writer commits them itself.
    static let inlineByteLimit = 16 << 20

    private let state = Mutex(State())
    /// Seconds at most between a write and the commit of its batch.
    let maximumDelay: Double

    init(maximumDelay: Double) {
        self.maximumDelay = maximumDelay
    }

    /// Stages `entry` for `key`.
    ///
    /// - Returns: The file of a staged write it replaced (never committed, so nobody else
    ///   points at it), whether the caller must schedule a flush, and whether the staging is
    ///   full (``writeLimit``, ``inlineByteLimit``), so the caller must flush now.
    func stage(
        _ entry: DiskCacheIndex.Entry,
        forKey key: String,
        storeGeneration: UInt64
    ) -> (replacedFile: String?, schedulesFlush: Bool, isFull: Bool) {
        state.withLock { state in
            let generation = state.nextGeneration
            state.nextGeneration += 1
            let staged = Staged(entry: entry, generation: generation, storeGeneration: storeGeneration)
            let replaced = state.staged.updateValue(staged, forKey: key)
            state.inlineBytes += (entry.inline?.count ?? 0) - (replaced?.entry.inline?.count ?? 0)
            let schedulesFlush = !state.isFlushScheduled
            state.isFlushScheduled = true
            let isFull = state.staged.count >= Self.writeLimit || state.inlineBytes >= Self.inlineByteLimit
            return (replaced?.entry.file, schedulesFlush, isFull)
        }
    }

    /// The staged entry for `key`, if any.
    func entry(forKey key: String) -> DiskCacheIndex.Entry? {
        state.withLock { state in state.staged.isEmpty ? nil : state.staged[key]?.entry }
    }

    var isEmpty: Bool { state.withLock { $0.staged.isEmpty } }

    /// Every staged write, to commit; a flush that runs now covers them, so a new write schedules
    /// another.
    func snapshot() -> [(key: String, staged: Staged)] {
        state.withLock { state in
            state.isFlushScheduled = false
            return state.staged.map { ($0.key, $0.value) }
        }
    }

    /// Drops the writes of `snapshot` that are still staged unchanged (committed, or given up)
    /// and returns them.
    @discardableResult
    func settle(_ snapshot: [(key: String, staged: Staged)]) -> [DiskCacheIndex.Entry] {
        state.withLock { state in
            snapshot.compactMap { key, staged in
                guard state.staged[key]?.generation == staged.generation else { return nil }
                state.inlineBytes -= staged.entry.inline?.count ?? 0
                return state.staged.removeValue(forKey: key)?.entry
            }
        }
    }

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

    /// Drops `key`'s staged write if it is the one stored at `modified`; returns its file.
    func discard(key: String, modified: Double) -> String?? {
        state.withLock { state in
            guard let staged = state.staged[key], staged.entry.modified == modified else { return nil }
            state.inlineBytes -= staged.entry.inline?.count ?? 0
            state.staged.removeValue(forKey: key)
            return .some(staged.entry.file)
        }
    }
}
