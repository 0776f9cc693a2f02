import Logging
import StowageCore
import Synchronization
import Tracing

/// The levels of a tiered cache, memory in front of disk, optionally in front of a level shared
/// by a fleet (``SharedLevel``), and the one place that decides the order in which copies enter
/// and leave them: ``HybridCache`` and the HTTP cache both read, write, remove and invalidate
/// through it, and apply other nodes' invalidations with its ``run(banning:)``.
///
/// **Disk first, then memory.** A read that misses memory goes to disk and puts what it finds
/// back in memory. Were memory dropped first, a read between the two removals would find the
/// old disk copy and promote it, and the stale value would outlive its removal in memory. With
/// the disk copy gone first, such a read finds nothing (or the memory copy that is about to go).
///
/// A disk failure never keeps the memory copy: it goes either way, and the failure is thrown
/// (a caller's removal) or logged (an invalidation from another node, which has no caller).
///
/// **Promotion loses to removal and to writes.** A read that found a disk copy just before a
/// removal must not put it in memory just after: every removal and invalidation advances
/// ``changeCount`` when it begins and again once its disk half is done (a read marked in
/// between may have found the disk copy just before it went), and ``keepInMemory(_:forKey:cost:readAt:)`` keeps a value only
/// when the count did not move since the read (``beginRead()``), checking again after the
/// insertion. A write (``write(_:forKey:cost:timeToLive:keepsInMemory:fillBegunAt:toDisk:)``) advances it between its disk
/// write and its memory write, so a read of the older disk copy cannot land in memory after
/// the newer value.
///
/// **One change of a key at a time.** Writes, removals and invalidations of a key wait for the
/// one before to finish both halves (``KeyLocks``): two that overlapped could otherwise leave a
/// memory-only value in front of an older disk copy, which comes back once memory lets it go.
///
/// **Memory never outlives a cleared disk.** A clear or removal of the disk cache, by any
/// handle in any process, advances its store generation; the levels empty memory before the
/// next read that sees it moved (``followStoreChanges()``), and a read or write that began
/// before the clear keeps nothing in memory.
///
/// **Nor another handle's removal.** Removals and invalidations that reach the disk count
/// themselves in the store's shared removal count once their disk half is done
/// (``StoreRemovals``); levels over the same store in another process (or on another handle)
/// that see it moved by a removal not their own empty memory before their next read, and a
/// read that began before it keeps nothing in memory. A write does not count: another
/// handle's memory may serve the value it replaced until it lets it go, as with any two
/// handles that read at different times.
///
/// **Memory alone.** Without a disk level (an HTTP cache in memory only, as
/// `URLCache(memoryCapacity:diskCapacity: 0, directory: nil)` keeps responses), the same calls
/// work on memory alone: nothing is written anywhere, and there is no store generation to follow.
///
/// **One read-through sequence** (`CacheLevels+Read.swift`, ``read(_:through:)``): memory, disk,
/// the shared level, the confirmation of a disk copy, and keeping what was found above, for
/// every kind of value the levels hold; a ``LevelReading`` says what differs between the kinds.
///
/// **The shared level** (`CacheLevels+Shared.swift`): a fill from it re-checks, once it has
/// written the local copies, whether an invalidation of the key began meanwhile, and drops
/// them if so; changes it missed during an outage are sent when it answers again; disk copies
/// that may have missed an invalidation are confirmed against it before use.
package final class CacheLevels<Value: Sendable>: Sendable {
    /// The memory level, in front.
    package let memory: MemoryCache<String, Value>
    /// The disk level, behind memory; `nil` for memory alone.
    package let disk: DiskCache?
    /// Where failures that cannot be thrown are told.
    package let logger: Logger
    private let changes = Atomic<UInt64>(0)
    private let removals = Atomic<UInt64>(0)
    /// Removals under way that reach the shared level after the local levels
    /// (``removingEverywhere(_:)``): a shared fill that begins while one runs may read the copy it
    /// is about to remove there.
    let removalsUnderWay = Atomic<Int>(0)
    /// Removals begun through ``removingEverywhere(_:)`` so far: a shared fill that sees it move
    /// was overtaken by this node's own removal, whose shared half it may have read before.
    let removalsBegun = Atomic<UInt64>(0)
    /// Writes under way and begun through ``writingEverywhere(_:_:)``, by stripe of keys: a shared
    /// fill overtaken by one keeps nothing.
    let sharedWrites = SharedWriteStripes()
    /// The disk cache's store generation as memory last followed it; `nil` without a disk level.
    private let generationWatch: GenerationWatch?
    /// The store's removal count as memory last followed it; `nil` without a disk level.
    private let removalWatch: RemovalWatch?
    /// Run, after memory is emptied, when another handle's removal is seen
    /// (``whenOthersRemove(_:)``).
    private let othersRemovalAction = Mutex<(@Sendable () -> Void)?>(nil)
    /// Run, after memory is emptied, when a clear of the disk cache through another handle is
    /// seen (``whenOthersClear(_:)``).
    private let othersClearAction = Mutex<(@Sendable () -> Void)?>(nil)
    /// Writes and removals of one key run one at a time, so that their disk and memory halves
    /// land in the same order on both levels.
    let keyLocks = KeyLocks()
    /// The level shared with other nodes, behind disk; `nil` for a local cache.
    package let sharedLevel: SharedLevel?
    /// Where the spans of reads and writes below memory go: the tracer the levels were given,
    /// else the process's (`InstrumentationSystem.tracer`, a no-op tracer until one is
    /// bootstrapped), read once when the levels are made. Reading the process's tracer takes a
    /// lock and a cast, about half a microsecond (the bench runner's `tracing.noop-span` row),
    /// a tenth of a disk hit, so it is not read per operation; bootstrap the tracing system
    /// before making caches, as a service's `main` does before it builds its services.
    package let activeTracer: any Tracer

    /// The levels `memory` in front of `disk` (`nil`: memory alone), in front of `shared`; spans
    /// go to `tracer` (`nil`: the process's).
    package init(
        memory: MemoryCache<String, Value>,
        disk: DiskCache?,
        shared: SharedLevel? = nil,
        logger: Logger,
        tracer: (any Tracer)? = nil
    ) {
        self.memory = memory
        self.disk = disk
        self.logger = logger
        activeTracer = tracer ?? InstrumentationSystem.tracer
        sharedLevel = shared
        generationWatch = disk.map { GenerationWatch($0.storeGeneration) }
        removalWatch = disk.map { RemovalWatch($0.storeRemovals) }
        shared?.health.whenRecovered { [weak self] in
            Task { await self?.replaySharedWrites() }
        }
    }

    /// Where a read below memory began: the disk cache's store generation, the store's removal
    /// count and ``changeCount``.
    package struct ReadMark: Sendable {
        fileprivate let store: StoreMark
        /// ``changeCount`` when the read began.
        package let change: UInt64
    }

    /// Empties memory when the disk cache was cleared or removed since the last look, or a value
    /// was removed from it through another handle (``StoreRemovals``), running the hook of
    /// ``whenOthersRemove(_:)`` then. Call it before looking in memory, and before storing what
    /// a fetch brought (another handle's removal is an invalidation).
    @inline(__always)
    package func followStoreChanges() {
        _ = followStore()
    }

    /// The disk cache's store generation and the store's removal count at one moment: a caller
    /// that finds them unchanged later knows no clear and no other handle's removal came in
    /// between (``beginRead()``, ``isUnchanged(since:)``).
    package struct StoreMark: Equatable, Sendable {
        fileprivate let generation: UInt64
        fileprivate let removals: UInt64
    }

    /// The store's generation and removal count now, memory emptied first as
    /// ``followStoreChanges()`` empties it.
    @inline(__always)
    private func followStore() -> StoreMark {
        let removals =
            removalWatch?.check {
                memory.removeAll()
                othersRemovalAction.withLock { $0 }?()
            } ?? 0
        let generation =
            generationWatch?.check {
                memory.removeAll()
                othersClearAction.withLock { $0 }?()
            } ?? 0
        return StoreMark(generation: generation, removals: removals)
    }

    /// Whether neither a clear nor a removal was counted since `mark` (always, without a disk level).
    @inline(__always)
    private func isCurrent(_ mark: StoreMark) -> Bool {
        (generationWatch?.isCurrent(mark.generation) ?? true) && (removalWatch?.isCurrent(mark.removals) ?? true)
    }

    /// Counts a removal whose disk half is done in the store's shared removal count, so that
    /// levels over the store elsewhere drop what they hold in memory (this one's memory is
    /// already without the value).
    private func announceRemoval() {
        removalWatch?.advance()
    }

    /// Marks the start of a read: follows the store generation, then notes ``changeCount``.
    package func beginRead() -> ReadMark {
        ReadMark(store: followStore(), change: changeCount)
    }

    /// Runs `action` each time a look at the store finds a removal through another handle, in
    /// this process or another, after memory is emptied: the HTTP cache then takes it as an
    /// invalidation of everything, so a response fetched before it is not stored after it.
    package func whenOthersRemove(_ action: @escaping @Sendable () -> Void) {
        othersRemovalAction.withLock { $0 = action }
    }

    /// Runs `action` each time a look at the store finds it cleared through another handle, in
    /// this process or another (`ClearCaches`, `stowage clear-caches`), after memory is emptied:
    /// the HTTP cache then empties what it keeps beside memory (its spilled answers' file).
    package func whenOthersClear(_ action: @escaping @Sendable () -> Void) {
        othersClearAction.withLock { $0 = action }
    }

    /// Whether nothing changed since `mark`: no removal, invalidation or write through these
    /// levels, no clear of the disk cache, and no removal through another handle, in this
    /// process or another (``StoreRemovals``); memory is emptied first when another's removal
    /// moved the count, as before any read.
    package func isUnchanged(since mark: ReadMark) -> Bool {
        followStore() == mark.store && changeCount == mark.change
    }

    /// Whether neither a clear of the disk cache nor a removal through another handle came since
    /// `mark` (writes and removals through these levels aside): memory was not emptied since,
    /// and what a read begun then keeps beside the values (``CacheLevels/changeCount`` noted
    /// with it) is not kept past such a clear. Memory is emptied first when one came, as
    /// before any read.
    package func storeUnchanged(since mark: ReadMark) -> Bool {
        followStore() == mark.store
    }

    /// Puts what a read begun at `mark` found below memory in memory, unless a clear, a removal,
    /// an invalidation or a write came in between (the copy it read may be gone or old).
    ///
    /// - Returns: Whether the value stayed in memory.
    @discardableResult
    package func keepInMemory(
        _ value: Value,
        forKey key: String,
        cost: Int,
        readAt mark: ReadMark
    ) -> Bool {
        guard changeCount == mark.change, isCurrent(mark.store) else { return false }
        memory.setValue(value, forKey: key, cost: cost)
        // A change that began between the check and the insertion may have dropped the memory
        // copy before it was there, and a clear or another handle's removal may have emptied
        // memory: drop it again.
        guard changeCount == mark.change, isCurrent(mark.store) else {
            _ = memory.removeValue(forKey: key)
            return false
        }
        return true
    }

    /// Writes through: `writeToDisk`, then `value` in memory (unless the disk cache was cleared
    /// meanwhile: memory must not outlive the disk copy).
    ///
    /// - Parameters:
    ///   - value: What memory keeps for `key`.
    ///   - cost: Its cost in memory.
    ///   - timeToLive: Its lifetime in memory; `nil` for the memory level's default.
    ///   - keepsInMemory: Whether memory keeps `value`; `false` for a value stored on disk only,
    ///     whose older memory copy is then dropped instead (after the disk write, so that a read
    ///     in between finds the old value at worst, never loses the new one).
    ///   - writeToDisk: Stores (or, for a value kept in memory only, removes) the disk copy.
    /// - Throws: What `writeToDisk` throws; the memory copy is then dropped too, so an older
    ///   value does not stay in front of the failed write.
    ///   - fill: For a fill from the shared level, where it began: nothing is written when a write
    ///     of this node's overtook it (``SharedWriteStripes``); checked under the key's lock.
    package func write(
        _ value: Value,
        forKey key: String,
        cost: Int,
        timeToLive: Duration? = nil,
        keepsInMemory: Bool = true,
        fillBegunAt fill: SharedWriteStripes.Stamp? = nil,
        toDisk writeToDisk: () async throws -> Void
    ) async throws {
        try await keyLocks.withLock(key) {
            if let fill, sharedWrites.isOvertaken(fill) {
                fill.markKeptNothing()
                return
            }
            try await writeInOrder(value, forKey: key, cost: cost, timeToLive: timeToLive, keepsInMemory: keepsInMemory)
            {
                try await writeToDisk()
            }
        }
    }

    /// ``write(_:forKey:cost:timeToLive:keepsInMemory:fillBegunAt:toDisk:)`` once no other change of `key` runs.
    private func writeInOrder(
        _ value: Value,
        forKey key: String,
        cost: Int,
        timeToLive: Duration?,
        keepsInMemory: Bool,
        toDisk writeToDisk: () async throws -> Void
    ) async throws {
        let store = followStore()
        do {
            try await writeToDisk()
        } catch {
            noteDiskChanged()
            _ = memory.removeValue(forKey: key)
            throw error
        }
        // Reads that found the older disk copy give way before the newer value goes in.
        noteDiskChanged()
        guard keepsInMemory else {
            _ = memory.removeValue(forKey: key)
            return
        }
        memory.setValue(value, forKey: key, cost: cost, timeToLive: timeToLive)
        // A clear, or a removal through another handle (perhaps of this key, committed on disk
        // after this write), came in between: the disk may no longer hold the value.
        if !isCurrent(store) { _ = memory.removeValue(forKey: key) }
    }

    /// Removals, invalidations and writes begun so far (``beginRead()`` notes it).
    package var changeCount: UInt64 { changes.load(ordering: .acquiring) }

    /// Removals and invalidations begun so far, writes left out: a fill from a level below
    /// that sees it move may have been overtaken by an invalidation of its key.
    package var removalCount: UInt64 { removals.load(ordering: .acquiring) }

    /// Counts a removal or invalidation about to begin: promotions of earlier reads give way, and
    /// a fill from a level below that checks ``removalCount`` afterwards drops what it filled.
    /// A removal counts again once its disk half is done (``noteDiskChanged()``): a read marked
    /// in between may have found the disk copy just before it went.
    private func noteRemoval() {
        removals.add(1, ordering: .acquiringAndReleasing)
        changes.add(1, ordering: .acquiringAndReleasing)
    }

    /// Counts a change to the disk copies that has landed (a write, or a removal's disk half): a
    /// read marked before it may have found the old copy, so its promotion gives way.
    private func noteDiskChanged() {
        changes.add(1, ordering: .acquiringAndReleasing)
    }

    /// Runs `removal`, which removes local copies and then their shared copies (``remove(_:)`` then
    /// ``removeShared(_:)``, say), as one removal for the shared fills of this node: a fill that
    /// begins before it ends may find in the shared level a copy `removal` has removed locally
    /// and not yet there, and keeps nothing (``readShared(_:fill:)``). Without this, that copy
    /// would be written back to disk and memory after the local removal and served after the
    /// removal returned, since a node does not hear its own removals from the shared level.
    ///
    /// With `isRemoval` `false` (a write that keeps its shared copy, say), `removal` runs uncounted.
    package func removingEverywhere<T>(
        when isRemoval: Bool = true,
        _ removal: () async throws -> T
    ) async rethrows -> T {
        guard isRemoval else { return try await removal() }
        // Counted before the removal's own `noteRemoval`: a fill that sees that count sees this one.
        removalsUnderWay.add(1, ordering: .sequentiallyConsistent)
        removalsBegun.add(1, ordering: .sequentiallyConsistent)
        defer { removalsUnderWay.subtract(1, ordering: .sequentiallyConsistent) }
        return try await removal()
    }

    /// Runs `write`, which stores `key` in the local levels and then in the shared level
    /// (``write(_:forKey:cost:timeToLive:keepsInMemory:fillBegunAt:toDisk:)`` then
    /// ``writeShared(_:forKey:timeToLive:)``, say), as one write for this node's shared fills: a
    /// fill that read the shared level before `write` reached it holds the value `write`
    /// replaces, and keeps nothing rather than land over `write`'s local copies (a node does not
    /// hear its own writes back). Without a shared level, `write` runs uncounted.
    package func writingEverywhere<T>(_ key: String, _ write: () async throws -> T) async rethrows -> T {
        guard sharedLevel != nil else { return try await write() }
        let stripe = sharedWrites.begin(key)
        defer { sharedWrites.end(stripe) }
        return try await write()
    }

    /// Drops every memory copy (another node's changes may have been missed); disk copies stay.
    /// Counts as a removal, so a read begun before keeps nothing it found on disk in memory.
    package func dropMemory() {
        noteRemoval()
        memory.removeAll()
    }

    /// Removes `key` from disk, then from memory.
    ///
    /// - Throws: What the disk cache throws; the memory copy is gone all the same.
    package func remove(_ key: String) async throws {
        try await keyLocks.withLock(key) {
            noteRemoval()
            defer {
                noteDiskChanged()
                _ = memory.removeValue(forKey: key)
                announceRemoval()
            }
            try await disk?.removeData(forKey: key)
        }
    }

    /// Drops the memory copy of `key` and leaves its disk copy, which the next read promotes
    /// again: memory given back, nothing made stale, so nothing is counted.
    package func removeFromMemory(_ key: String) {
        _ = memory.removeValue(forKey: key)
    }

    /// Removes the disk copy of `key` and leaves its memory copy. A read that found the disk
    /// copy just before it went gives way rather than put it in memory after.
    ///
    /// - Throws: What the disk cache throws.
    package func removeFromDisk(_ key: String) async throws {
        try await keyLocks.withLock(key) {
            noteDiskChanged()
            defer { noteDiskChanged() }
            try await disk?.removeData(forKey: key)
        }
    }

    /// Drops the local copies of `key` another node made stale: disk (when `includingDisk`),
    /// then memory. A disk failure is logged with `reason` (what was being dropped). With
    /// `read` (where a shared read began), nothing is dropped when a write of this node's
    /// overtook the read: checked under the key's lock.
    package func drop(
        _ key: String,
        includingDisk: Bool = true,
        unlessOvertaken read: SharedWriteStripes.Stamp? = nil,
        reason: String
    ) async {
        await keyLocks.withLock(key) {
            // A write of this node's begun since `read` wrote the copies here after what the read
            // saw: they are not the ones to drop (for a memory-only write, the only copy).
            if let read, sharedWrites.isOvertaken(read) { return }
            noteRemoval()
            if includingDisk, let disk {
                do {
                    try await disk.removeData(forKey: key)
                } catch {
                    logger.warning("could not drop \(reason)", metadata: ["key": "\(key)", "error": "\(error)"])
                }
                noteDiskChanged()
            }
            _ = memory.removeValue(forKey: key)
            if includingDisk { announceRemoval() }
        }
    }

    /// Drops every local copy whose key starts with `prefix` (a ban; its UTF-8 bytes, in both
    /// levels, ``KeyPrefix``): disk (when `includingDisk`), then memory. A disk failure is
    /// logged with `reason`.
    package func drop(keysWithPrefix prefix: String, includingDisk: Bool = true, reason: String) async {
        noteRemoval()
        if includingDisk, let disk {
            do {
                for key in try await disk.keys(withPrefix: prefix) {
                    try await disk.removeData(forKey: key)
                }
            } catch {
                logger.warning("could not drop \(reason)", metadata: ["prefix": "\(prefix)", "error": "\(error)"])
            }
            noteDiskChanged()
        }
        memory.removeValues { KeyPrefix.covers($0, under: prefix) }
        if includingDisk { announceRemoval() }
    }

    /// Removes the entries stored with `tag` from disk, then their keys from memory.
    ///
    /// - Returns: The keys removed.
    package func removeAll(tagged tag: String) async throws -> [String] {
        noteRemoval()
        // Counted even when the disk throws: some of the tagged entries may be gone.
        defer { announceRemoval() }
        let keys: [String]
        do {
            keys = try await disk?.removeAll(tagged: tag) ?? []
        } catch {
            noteDiskChanged()
            throw error
        }
        noteDiskChanged()
        for key in keys { _ = memory.removeValue(forKey: key) }
        return keys
    }

    /// Empties both levels, disk first. Emptying the disk cache advances its store generation,
    /// so every other handle on it empties its memory level too.
    ///
    /// - Returns: The disk level's report (the mount points it left in place among its
    ///   failures); without a disk level, an empty report whose path is empty.
    @discardableResult
    package func removeAll() async throws -> ClearReport {
        noteRemoval()
        defer {
            noteDiskChanged()
            memory.removeAll()
        }
        return try await disk?.removeAll() ?? ClearReport(path: "")
    }
}
