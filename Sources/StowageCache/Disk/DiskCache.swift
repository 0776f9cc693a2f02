import Foundation
import GRDB
import Logging
import StowageCore
import Synchronization

/// A cache of bytes on disk with string keys, limits on size, count and age, and an index
/// in SQLite.
///
/// ```swift
/// let cache = try DiskCache(directory: caches.appending(path: "thumbnails"))
/// try await cache.setData(png, forKey: "https://example.com/a.png")
/// let data = try await cache.data(forKey: "https://example.com/a.png")
/// ```
///
/// - Values up to ``Configuration/inlineThreshold`` live in the index; larger ones are files
///   named by a hash of the key (`DiskCacheFileName`), written to a temporary file and renamed
///   before the index points at them: a value is visible only once complete, and a file that
///   does not read back at its recorded length is treated as missing, never returned.
/// - Size and count come from the index (kept by triggers), never from walking the directory.
/// - When a write takes the cache over ``Configuration/sizeLimit`` or
///   ``Configuration/countLimit``, least-recently-used entries are removed until both are at
///   ``Configuration/trimRatio`` of their limits (SDImageCache's half), a few dozen in each
///   write's own transaction (python-diskcache's cull), or by a background trim when a write
///   went further over. Readers are never blocked by it (SQLite WAL).
/// - Several processes may open one directory; SQLite serializes their writes.
/// - `removeAll()` advances the cache's generation (`.stowage-generation`, a counter in shared
///   memory): every handle, in every process, sees it before its next read, and memory tiers
///   over the cache drop what they hold. A handle whose directory is deleted (a user wipe, a
///   cleaner) sees it retired: ``isRemoved``, reads miss, writes throw `.notFound`.
/// - Memory tiers over the cache (``HybridCache``, the HTTP cache) count their removals in a
///   second shared counter (`.stowage-removals`): a removal, purge or invalidation through one of
///   them empties the memory of every other before its next read, in every process.
/// - Reads record the access time in memory and write them to the index in batches, so a read
///   costs one indexed `SELECT`.
///
/// Every operation has two overloads of one name, as GRDB's do: an async one, which runs the
/// blocking work off Swift's cooperative threads, and a synchronous one for callers that are on
/// their own thread already (the compiler picks by context: `await` for the async one).
public final class DiskCache: Sendable {
    /// The cache's directory: `index.sqlite`, `data/`, `tmp/` and a `CACHEDIR.TAG`.
    public let directory: URL
    /// The configuration the cache was opened with.
    public let configuration: Configuration

    let index: DiskCacheIndex
    let files: DiskCacheFiles
    let counters: CacheCounters
    let accessLog = Mutex<[String: Double]>([:])
    /// Runs the background work — trims, access-time batches, staged-write commits, WAL
    /// checkpoints — one job at a time; `close()` drains it.
    let maintenance: DiskCacheMaintenance
    let processLock: LockFile
    /// ``Lifecycle``: open, closing or closed.
    let lifecycle = Atomic<UInt8>(Lifecycle.open)
    /// Held for the whole of `close()`, so that a second caller returns once the first has
    /// committed and closed, not while it drains (only closes ever wait on it).
    let closeLock = Mutex<Void>(())
    /// Advanced by ``removeAll()`` and retired when the directory is removed, in any process;
    /// memory tiers over this cache (``HybridCache``, the HTTP cache) follow it.
    package let storeGeneration: StoreGeneration
    /// What this handle last saw of ``storeGeneration``: staged writes from before a clear are
    /// dropped when it moves.
    let generationWatch: GenerationWatch
    /// Advanced by memory tiers over this cache when they remove values, in any process; each
    /// tier empties its memory when another's removal moves it (``RemovalWatch``).
    package let storeRemovals: StoreRemovals
    /// Shares transactions between writers that commit at the same time.
    let commits: DiskCacheCommitQueue
    /// Writes not committed yet; only with ``Durability/deferred(maximumDelay:)``.
    let staging: DiskCacheStaging?
    /// Held while staged writes commit, so a removal that follows a flush sees them committed.
    let stagedFlushLock = Mutex<Void>(())
    /// Moves twice each time damage found while open empties the index, as the reset begins and
    /// as it ends (``recoverFromDamage(_:seenResets:)``): a value read before and after that
    /// differs if a reset ran, or was running, in between.
    let indexResets = Atomic<Int>(0)
    /// True until `init` returns: it holds `open.lock` itself meanwhile.
    let isOpening = Atomic<Bool>(true)
    /// `open.lock`, which processes take to open the cache one at a time.
    let openLockPath: String

    /// Buffered access times are written to the index once this many are pending.
    static let accessLogFlushCount = 512

    /// Opens the cache in `directory`, creating it if needed, and collects what a crash left.
    ///
    /// Opening creates the directory (`0700`) with a `CACHEDIR.TAG`, excludes it from backup
    /// where the file system has extended attributes, opens or creates the index, and removes
    /// files that no index row points at and rows whose file is gone.
    ///
    /// - Parameters:
    ///   - directory: The cache's own directory, e.g. `caches/thumbnails`.
    ///   - configuration: Limits and behaviour; see ``Configuration``.
    /// - Throws: `StowageError`: `.invalidConfiguration` for a bad configuration, `.corrupt` when
    ///   the index is damaged and the policy is ``CorruptIndexPolicy/fail`` (or another process
    ///   has it open), file system errors when the directory cannot be created.
    public init(directory: URL, configuration: Configuration = Configuration()) throws {
        try configuration.validate()
        let root = try directory.checkedFileSystemPath(subject: "the disk cache directory")
        self.directory = directory
        self.configuration = configuration
        try DirectoryCreation.createDirectory(at: directory)
        try CacheDirectoryTag.write(in: directory)
        do {
            if try !Marks.isExcludedFromBackup(directory) { try Marks.setExcludedFromBackup(true, at: directory) }
        } catch StowageError.Code.unsupported {
            // No xattrs here; CACHEDIR.TAG still tells backup tools.
        }
        // `open.lock` makes processes open the index one at a time (SQLite's journal-mode
        // switch at open does not wait for a busy lock). `lock` is held shared by every process
        // with the cache open; taking it exclusively tells this one it is alone, so files
        // written but never indexed (a crash mid-write) can go at once and a damaged index be
        // rebuilt. With company, only leftovers older than a grace period are touched.
        let openLockPath = root + "/open.lock"
        self.openLockPath = openLockPath
        let openLock = try LockFile(path: openLockPath)
        try openLock.lock(.exclusive)
        defer { openLock.unlock() }
        let lock = try LockFile(path: root + "/lock")
        let isOnlyUser = try lock.tryLock(.exclusive)
        // Converting to shared fails only without kernel lock memory (ENOLCK); the exclusive
        // lock then stays held, which keeps other processes out rather than in.
        defer { try? lock.lock(.shared) }
        processLock = lock
        storeGeneration = try StoreGeneration(directory: root)
        generationWatch = GenerationWatch(storeGeneration)
        storeRemovals = try StoreRemovals(directory: root)
        files = try DiskCacheFiles(root: root, synchronous: configuration.synchronousWrites)
        index = try Self.openIndex(
            path: Self.indexPath(in: directory),
            files: files,
            configuration: configuration,
            isOnlyUser: isOnlyUser
        )
        let maintenance = DiskCacheMaintenance(name: configuration.name, logger: configuration.logger)
        self.maintenance = maintenance
        let checkpointer = index.checkpointer
        commits = DiskCacheCommitQueue(
            index: index,
            budget: configuration.budget,
            cull: configuration.cull,
            accounting: configuration.sizeAccounting,
            afterCommit: {
                guard let checkpointer else { return }
                checkpointer.catchUpIfBehind()
                guard checkpointer.commitFinished() else { return }
                maintenance.schedule(.checkpoint) { checkpointer.checkpoint() }
            }
        )
        if case .deferred(let maximumDelay) = configuration.durability {
            staging = DiskCacheStaging(maximumDelay: maximumDelay)
        } else {
            staging = nil
        }
        counters = CacheCounters(name: configuration.name, tier: "disk")
        try collectOrphans(isOnlyUser: isOnlyUser)
        commits.setAccessSource { [weak self] in self?.takeAccessLog() ?? [:] }
        isOpening.store(false, ordering: .releasing)
        scheduleIntegrityCheck()
    }

    /// Opens the cache without blocking Swift's cooperative threads; see ``init(directory:configuration:)``.
    public static func open(directory: URL, configuration: Configuration = Configuration()) async throws -> DiskCache {
        try await BlockingWork.run { try DiskCache(directory: directory, configuration: configuration) }
    }

    /// Opens the cache `name` in `container`'s caches location.
    ///
    /// - Throws: `StowageError` `.invalidArgument` when `name` is not a single path component.
    public convenience init(container: Container, name: String, configuration: Configuration? = nil) throws {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw StowageError.invalidArgument("a disk cache name must be one path component, not '\(name)'")
        }
        let caches = try container.directory(for: .caches)
        try self.init(
            directory: caches.appending(path: name, directoryHint: .isDirectory),
            configuration: configuration ?? Configuration(name: name)
        )
    }

    /// Releases memory only: the work that ends a cache's life (staged writes, buffered access
    /// times, the index's connections) is `close()`'s, so that dropping the last reference
    /// never blocks the releasing thread on the disk. A cache released open loses its staged
    /// writes, as a crash would, and says so in the log.
    deinit {
        guard lifecycle.load(ordering: .acquiring) != Lifecycle.closed else { return }
        let staged = staging?.snapshot().count ?? 0
        configuration.logger.log(
            level: staged > 0 ? .error : .debug,
            "disk cache released without close()",
            metadata: ["cache": "\(configuration.name)", "lostStagedWrites": "\(staged)"]
        )
    }

    /// Where the handle is in its life; `close()` moves it on.
    enum Lifecycle {
        static let open: UInt8 = 0
        /// `close()` is draining pending work: no new writes, the drain's own index calls pass.
        static let closing: UInt8 = 1
        /// Every operation throws ``closedError()``.
        static let closed: UInt8 = 2
    }

    /// Whether `close()` has begun.
    public var isClosed: Bool { lifecycle.load(ordering: .acquiring) != Lifecycle.open }

    /// Commits what is pending and closes the index: staged writes
    /// (``Durability/deferred(maximumDelay:)``), the buffered access times, a trim or checkpoint
    /// running in the background. Afterwards every operation throws `StowageError` `.closed`,
    /// and another handle (in this process or another) sees everything written before.
    /// Closing again does nothing; a close racing another returns once that one has finished.
    ///
    /// Call it when done with the cache (a ``HybridCache`` or an `HTTPCache` closes theirs,
    /// and their swift-service-lifecycle `run()` does when the service group shuts down):
    /// releasing the last reference does no I/O, so writes still staged then are lost.
    ///
    /// - Throws: `StowageError` when the staged writes or the access times cannot be committed;
    ///   the cache is closed all the same.
    public func close() throws {
        try closeLock.withLock { _ in try closeOnce() }
    }

    /// The work of `close()`, done by its first caller.
    private func closeOnce() throws {
        guard
            lifecycle.compareExchange(
                expected: Lifecycle.open,
                desired: Lifecycle.closing,
                ordering: .sequentiallyConsistent
            ).exchanged
        else { return }
        // Background work already queued (a trim, an access-time batch, a staged flush, a
        // checkpoint) finishes first; the commits below queue nothing more, and nothing runs on
        // the lane again.
        maintenance.drain()
        // From here a write that passed its open check just before close() began is refused
        // rather than staged after the flush below took what it commits.
        staging?.seal()
        var failure: (any Error)?
        do { try flushStagedWrites() } catch { failure = error }
        do { try flushAccessLog() } catch { failure = failure ?? error }
        lifecycle.store(Lifecycle.closed, ordering: .releasing)
        index.checkpointer?.close()
        index.reader?.closeIdleConnections()
        checkpointBeforeClosing()
        do {
            try index.pool.close()
        } catch let error as DatabaseError {
            failure = failure ?? StowageError.index(error, path: index.path)
        } catch {
            failure = failure ?? error
        }
        processLock.unlock()
        if let failure {
            configuration.logger.error(
                "closing the disk cache: \(failure)",
                metadata: ["cache": "\(configuration.name)"]
            )
            throw failure
        }
    }

    /// Copies the whole write-ahead log into the index and empties it, when this handle is the
    /// cache's only user: the checkpoint SQLite makes when the last connection to a file closes.
    ///
    /// That one never ran: GRDB's pool closes its writer before its readers
    /// (`DatabasePool.close()`), and a read-only connection closing last cannot checkpoint
    /// (`strace`: its exclusive lock fails with `EBADF`). The log was left whole, often holding
    /// the entire index (1,000 entries: a 4 KiB file beside a 1.5 MB log), and the next open
    /// recovered it, reading every frame before its first query: an open that cost what the
    /// log held, up to the 8,000 pages the checkpointer allows. With company, the others'
    /// checkpoints and last close do it.
    private func checkpointBeforeClosing() {
        guard !index.isOpenedOnFullVolume, (try? processLock.tryLock(.exclusive)) == true else { return }
        do {
            try index.pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        } catch {
            configuration.logger.warning(
                "disk cache checkpoint before closing failed; the next open recovers the log: \(error)",
                metadata: ["cache": "\(configuration.name)"]
            )
        }
    }

    /// See `close()`; the work runs off Swift's cooperative threads.
    public func close() async throws {
        try await BlockingWork.run { try self.close() }
    }

    /// Throws ``closedError()`` once `close()` has begun: for writes, which a closing cache no
    /// longer takes.
    func checkOpen() throws {
        guard lifecycle.load(ordering: .acquiring) == Lifecycle.open else { throw closedError() }
    }

    /// The error of an operation on a closed cache.
    func closedError() -> StowageError {
        StowageError(
            code: .closed,
            message: "the disk cache '\(configuration.name)' was closed; open it again to use it",
            path: directory.fileSystemPath
        )
    }

    // MARK: - Reading

    /// The value stored for `key`, or `nil` when there is none, it expired, or it did not read
    /// back whole.
    ///
    /// An inline value (up to ``Configuration/inlineThreshold``) is read on the calling task:
    /// one indexed `SELECT` on a prepared statement, bounded work that costs less than a hop to
    /// another thread. A file value is read on the blocking-work pool, never on Swift's
    /// cooperative threads.
    ///
    /// - Throws: `StowageError` when the index or the file cannot be read (not for a miss).
    public func data(forKey key: String) async throws -> Data? {
        try await storedData(forKey: key)?.data
    }

    /// The synchronous overload of `data(forKey:)`: the same work on the calling thread.
    public func data(forKey key: String) throws -> Data? {
        try storedData(forKey: key)?.data
    }

    /// A stored value and when it was last written.
    package struct StoredData: Sendable {
        package var data: Data
        /// When the value was stored (by the cache's clock).
        package var modified: Date

        /// A 64-bit hash of the bytes and the time they were stored (Swift's `Hasher`, seeded
        /// for this process): equal for the same copy, and all but surely different for any
        /// other. Kept in memory only, never stored.
        package var fingerprint: UInt64 {
            var hasher = Hasher()
            data.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(modified.timeIntervalSinceReferenceDate)
            return UInt64(bitPattern: Int64(hasher.finalize()))
        }
    }

    /// The value stored for `key` with its modification date, for callers that must know how
    /// old the copy is (a ``HybridCache`` with a shared level); otherwise as ``data(forKey:)``.
    package func storedData(forKey key: String) async throws -> StoredData? {
        let now = configuration.clock.now().timeIntervalSince1970
        switch try lookUp(key: key, now: now) {
        case .done(let stored):
            return stored
        case .needsBlockingWork(let entry):
            return try await BlockingWork.run { try self.finishLookUp(key: key, entry: entry, now: now) }
        }
    }

    /// The synchronous overload of `storedData(forKey:)`: one indexed `SELECT` and, for a file
    /// value, one read, on the calling thread.
    package func storedData(forKey key: String) throws -> StoredData? {
        let now = configuration.clock.now().timeIntervalSince1970
        switch try lookUp(key: key, now: now) {
        case .done(let stored):
            return stored
        case .needsBlockingWork(let entry):
            return try finishLookUp(key: key, entry: entry, now: now)
        }
    }

    /// What the index alone answers for a read.
    enum Lookup {
        /// A miss, or a sound inline value.
        case done(StoredData?)
        /// A file to read, or an inline value that failed its checks and must be removed.
        case needsBlockingWork(DiskCacheIndex.Entry)
    }

    /// The part of a read that touches only the index: a miss, an expired entry or a sound
    /// inline value ends here, with the hit or miss counted.
    func lookUp(key: String, now: Double) throws -> Lookup {
        guard let entry = try currentEntry(forKey: key), !isExpired(entry, key: key, now: now) else {
            counters.recordMiss()
            return .done(nil)
        }
        guard let value = Self.soundInlineValue(of: entry) else { return .needsBlockingWork(entry) }
        return .done(hit(key: key, value: value, entry: entry, now: now))
    }

    /// An entry's value when the index holds it whole and sound (inline, of its recorded size,
    /// with its checksum); `nil` for a file value or one that fails a check.
    static func soundInlineValue(of entry: DiskCacheIndex.Entry) -> Data? {
        guard entry.file == nil, let value = inlineValue(of: entry), checksumMatches(value, entry) else { return nil }
        return value
    }

    /// The rest of a read the index could not finish: reads a value file, or removes a value
    /// that failed its checks.
    func finishLookUp(key: String, entry: DiskCacheIndex.Entry, now: Double) throws -> StoredData? {
        let value = try entry.file.map { try files.read($0, expectedSize: entry.size) } ?? Self.inlineValue(of: entry)
        guard let value, Self.checksumMatches(value, entry) else {
            // A file that is simply gone was removed by another process after the index read.
            let isGone = value == nil && entry.file.map(files.isGone) == true
            try discardDamaged(
                key: key,
                entry: entry,
                reason: isGone ? "file gone" : value == nil ? "unreadable" : "checksum mismatch",
                isDamage: !isGone
            )
            counters.recordMiss()
            return nil
        }
        return hit(key: key, value: value, entry: entry, now: now)
    }

    /// `key`'s staged write, or its row in the index.
    func currentEntry(forKey key: String) throws -> DiskCacheIndex.Entry? {
        if lifecycle.load(ordering: .acquiring) == Lifecycle.closed { throw closedError() }
        guard !Self.containsNUL(key) else { return nil }  // never stored (checkStorable)
        // A removed cache serves nothing, even from the files this handle still holds open.
        guard !StoreGeneration.isRetired(followGeneration()) else { return nil }
        if let staged = staging?.entry(forKey: key) { return staged }
        return try indexCall { try index.entry(forKey: key) }
    }

    /// Counts a hit and records the access time.
    func hit(key: String, value: Data, entry: DiskCacheIndex.Entry, now: Double) -> StoredData {
        counters.recordHit(bytes: value.count)
        if now - entry.accessed >= configuration.effectiveAccessTimeResolution { recordAccess(key: key, at: now) }
        return StoredData(data: value, modified: Date(timeIntervalSince1970: entry.modified))
    }

    /// An inline entry's value, or `nil` when its length disagrees with the recorded size.
    static func inlineValue(of entry: DiskCacheIndex.Entry) -> Data? {
        guard let inline = entry.inline else { return entry.size == 0 ? Data() : nil }
        return Int64(inline.count) == entry.size ? inline : nil
    }

    /// Whether a live value is stored for `key`, without reading it or counting a hit.
    public func contains(key: String) throws -> Bool {
        let now = configuration.clock.now().timeIntervalSince1970
        guard let entry = try currentEntry(forKey: key) else { return false }
        return !isExpired(entry, key: key, now: now)
    }

    /// Whether a live value is stored for `key`.
    public func contains(key: String) async throws -> Bool {
        try await BlockingWork.run { try self.contains(key: key) }
    }

    // MARK: - Writing

    /// Stores `data` for `key`, replacing any value.
    ///
    /// - Parameters:
    ///   - data: The bytes; any length.
    ///   - key: Any string; it never becomes a path.
    ///   - timeToLive: How long until the value expires; `nil` uses
    ///     ``Configuration/defaultTimeToLive``.
    ///   - tag: A label shared by entries that go together (a user, a feed, a screen);
    ///     `removeAll(tagged:)` removes them in one indexed statement.
    ///   - priority: ``WritePriority/important`` (the default), or
    ///     ``WritePriority/opportunistic`` for nice-to-have data, skipped when the volume is short
    ///     of space (Apple's storage guide's opportunistic capacity).
    /// - Returns: ``WriteOutcome/stored``, or ``WriteOutcome/skippedForLowSpace(available:)`` for
    ///   an opportunistic value that did not fit.
    /// - Throws: `StowageError` when the file or the index cannot be written (`.noSpace` when
    ///   the volume is full); the previous value then stays.
    @discardableResult
    public func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration? = nil,
        tag: String? = nil,
        priority: WritePriority = .important
    ) async throws -> WriteOutcome {
        for attempt in 0..<2 {
            let resets = indexResets.load(ordering: .acquiring)
            // The checks and the file on a lane, which queues the write and commits its group there
            // when no commit is running; a write that queues behind one waits without a thread.
            let prepared: SubmittedStore
            do {
                prepared = try await BlockingWork.run { () throws -> SubmittedStore in
                    switch try self.prepareStore(
                        data,
                        forKey: key,
                        timeToLive: timeToLive?.timeInterval,
                        tag: tag,
                        computeSeconds: nil,
                        priority: priority
                    ) {
                    case .done(let outcome): return .done(outcome)
                    case .commit(let entry):
                        return .submitted(entry, self.commits.submit([.init(key: key, entry: entry)]))
                    }
                }
            } catch {
                // A reset removed the file or its directory while it was written.
                if attempt == 0, resetRan(since: resets) { continue }
                throw error
            }
            switch prepared {
            case .done(let outcome): return outcome
            case .submitted(let entry, let submission):
                try await commit(entry, forKey: key, submitted: submission)
                if attempt == 0, entry.file != nil, resetRan(since: resets) { continue }
                return .stored
            }
        }
        return .stored
    }

    /// Whether a reset of the damaged index (``recoverFromDamage(_:seenResets:)``) ran, or was
    /// running, since ``indexResets`` read `resets`. The reset removes every value file: a store
    /// that wrote its file before it, and committed on the fresh index, names a file that is gone
    /// (it said `.stored`, the next read missed), and one whose file or hash directory went while
    /// it was written fails with `ENOENT`. Such a store is made once more.
    func resetRan(since resets: Int) -> Bool {
        indexResets.load(ordering: .acquiring) != resets
    }

    /// The synchronous overload of `setData(_:forKey:timeToLive:tag:priority:)`: the same work on
    /// the calling thread.
    @discardableResult
    public func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration? = nil,
        tag: String? = nil,
        priority: WritePriority = .important
    ) throws -> WriteOutcome {
        try store(
            data,
            forKey: key,
            timeToLive: timeToLive?.timeInterval,
            tag: tag,
            computeSeconds: nil,
            priority: priority
        )
    }

    /// Stores `data`, recording how long it took to compute (for memoize's early refresh).
    @discardableResult
    func store(
        _ data: Data,
        forKey key: String,
        timeToLive: TimeInterval?,
        tag: String?,
        computeSeconds: Double?,
        priority: WritePriority = .important
    ) throws -> WriteOutcome {
        for attempt in 0..<2 {
            let resets = indexResets.load(ordering: .acquiring)
            let prepared: PreparedStore
            do {
                prepared = try prepareStore(
                    data,
                    forKey: key,
                    timeToLive: timeToLive,
                    tag: tag,
                    computeSeconds: computeSeconds,
                    priority: priority
                )
            } catch {
                // A reset removed the file or its directory while it was written.
                if attempt == 0, resetRan(since: resets) { continue }
                throw error
            }
            switch prepared {
            case .done(let outcome): return outcome
            case .commit(let entry):
                try commit(entry, forKey: key)
                if attempt == 0, entry.file != nil, resetRan(since: resets) { continue }
                return .stored
            }
        }
        return .stored
    }

    /// A write after its checks and its file: finished (skipped, or staged for a deferred
    /// commit), or an entry for the group commit.
    enum PreparedStore: Sendable {
        case done(WriteOutcome)
        case commit(DiskCacheIndex.Entry)
    }

    /// A task's write after ``prepareStore``: finished, or its entry queued for the group commit
    /// (``DiskCacheCommitQueue/submit(_:)``), for ``commit(_:forKey:submitted:)`` to await.
    enum SubmittedStore: Sendable {
        case done(WriteOutcome)
        case submitted(DiskCacheIndex.Entry, DiskCacheCommitQueue.Submission)
    }

    /// The part of a store before its commit, all of it blocking: the checks, room made, the
    /// value's file written; with a staging (``Durability/deferred(maximumDelay:)``) the write is
    /// staged here.
    func prepareStore(
        _ data: Data,
        forKey key: String,
        timeToLive: TimeInterval?,
        tag: String?,
        computeSeconds: Double?,
        priority: WritePriority
    ) throws -> PreparedStore {
        try Self.checkStorable(key: key, tag: tag)
        try checkOpen()
        switch priority {
        case .opportunistic:
            if let available = try opportunisticShortfall(for: data.count) {
                return .done(.skippedForLowSpace(available: available))
            }
        case .important:
            try makeRoom(for: data.count)
        }
        try checkRoom(for: data.count)
        let generation = storeGeneration.value
        if StoreGeneration.isRetired(generation) { throw removedError() }
        let now = configuration.clock.now().timeIntervalSince1970
        let lifetime = timeToLive ?? configuration.defaultTimeToLive?.timeInterval
        var entry = DiskCacheIndex.Entry(
            file: nil,
            inline: nil,
            size: Int64(data.count),
            created: now,
            modified: now,
            accessed: now,
            expires: lifetime.map { now + $0 },
            tag: tag,
            computeSeconds: computeSeconds
        )
        entry.checksum = CRC32C.checksum(data)
        if data.count > configuration.inlineThreshold {
            let name = DiskCacheFileName.make(forKey: key)
            try files.write(data, as: name)
            entry.file = name
        } else {
            entry.inline = data
        }
        guard let staging else { return .commit(entry) }
        guard
            let (replacedFile, schedulesFlush, isFull) = staging.stage(
                entry,
                forKey: key,
                storeGeneration: generation
            )
        else {
            // close() took its last snapshot since the check above: this write would never commit.
            if let file = entry.file { files.remove([file]) }
            throw closedError()
        }
        if let replacedFile { files.remove([replacedFile]) }
        accessLog.withLock { _ = $0.removeValue(forKey: key) }
        counters.recordWrite(bytes: entry.size)
        // The write is staged either way; a failed commit drops it as the scheduled flush would.
        if isFull { try flushStagedWrites() }
        if schedulesFlush {
            // On ``Configuration/deferredCommitClock``; the job holds the cache weakly, so a
            // released cache is not kept alive by its timer.
            maintenance.schedule(.stagedFlush, after: staging.maximumDelay, on: configuration.deferredCommitClock) {
                [weak self] in try self?.flushStagedWrites()
            }
        }
        return .done(.stored)
    }

    /// Commits the writes staged by ``Durability/deferred(maximumDelay:)`` now; without it, does
    /// nothing. Removals, trims, streaming writes and closing the cache do this first by
    /// themselves.
    ///
    /// - Throws: `StowageError` when the commit fails; the staged writes are then dropped
    ///   (their keys read as before the writes), as a crash would have.
    public func flush() throws {
        if lifecycle.load(ordering: .acquiring) == Lifecycle.closed { throw closedError() }
        try flushStagedWrites()
    }

    /// See ``flush()``.
    public func flush() async throws {
        try await BlockingWork.run { try self.flush() }
    }

    /// Commits every staged write in one transaction (with other writers' through the group
    /// commit); on failure drops them and removes their files.
    func flushStagedWrites() throws {
        guard let staging, !staging.isEmpty else { return }
        try stagedFlushLock.withLock { _ in
            files.remove(staging.dropWrites(notAt: storeGeneration.value))
            let snapshot = staging.snapshot()
            guard !snapshot.isEmpty else { return }
            let outcomes: [DiskCacheCommitQueue.Outcome]
            do {
                outcomes = try committing {
                    try commits.commit(snapshot.map { .init(key: $0.key, entry: $0.staged.entry) })
                }
            } catch {
                files.remove(staging.settle(snapshot, committed: false))
                throw error
            }
            staging.settle(snapshot, committed: true)
            for outcome in outcomes { settleEvictions(outcome) }
            files.remove(outcomes.compactMap(\.replacedFile))
            if let last = outcomes.last, isOverLimit(count: last.count, size: last.size) { scheduleTrim() }
        }
    }

    /// Records `entry` for `key` in one transaction, after its file (if any) is complete under
    /// `data/`: the file of a replaced value goes after the commit, the entry's own file if the
    /// commit fails. Schedules a trim when the cache is over a limit.
    /// Goes through the group commit, after any staged writes (which are older).
    func commit(_ entry: DiskCacheIndex.Entry, forKey key: String) throws {
        let outcome: DiskCacheCommitQueue.Outcome
        do {
            try flushStagedWrites()
            outcome = try committing { try commits.commit([.init(key: key, entry: entry)])[0] }
        } catch {
            if let file = entry.file { files.remove([file]) }
            throw error
        }
        settle(outcome, of: entry, forKey: key)
    }

    /// ``commit(_:forKey:)-(_,_)`` for a task, which waits for its group commit without holding
    /// a thread, `submitted` already (its first attempt; a retry after a repair of the index
    /// submits again); file removals go to a lane. Only for a cache without a staging (whose
    /// staged writes, older, would have to commit first).
    func commit(
        _ entry: DiskCacheIndex.Entry,
        forKey key: String,
        submitted: DiskCacheCommitQueue.Submission
    ) async throws {
        let outcome: DiskCacheCommitQueue.Outcome
        var submission: DiskCacheCommitQueue.Submission? = submitted
        do {
            outcome = try await committing {
                if let first = submission {
                    submission = nil
                    return try await commits.outcomes(of: first)[0]
                }
                return try await commits.commit([.init(key: key, entry: entry)])[0]
            }
        } catch {
            if let file = entry.file { _ = await BlockingWork.run { self.files.remove([file]) } }
            throw error
        }
        if outcome.replacedFile == nil, outcome.evicted.count == 0, !outcome.beganCull {
            settle(outcome, of: entry, forKey: key)  // nothing to unlink
        } else {
            await BlockingWork.run { self.settle(outcome, of: entry, forKey: key) }
        }
    }

    /// What follows a committed write: the files it replaced or evicted removed, its counts.
    private func settle(_ outcome: DiskCacheCommitQueue.Outcome, of entry: DiskCacheIndex.Entry, forKey key: String) {
        settleEvictions(outcome)
        if let replaced = outcome.replacedFile { files.remove([replaced]) }
        accessLog.withLock { _ = $0.removeValue(forKey: key) }
        counters.recordWrite(bytes: entry.size)
        if isOverLimit(count: outcome.count, size: outcome.size) { scheduleTrim() }
    }

    /// Removes `key`'s value; returns whether there was one.
    @discardableResult
    public func removeData(forKey key: String) async throws -> Bool {
        try await BlockingWork.run { try self.removeData(forKey: key) }
    }

    /// The synchronous overload of `removeData(forKey:)`: the same work on the calling thread.
    @discardableResult
    public func removeData(forKey key: String) throws -> Bool {
        if lifecycle.load(ordering: .acquiring) == Lifecycle.closed { throw closedError() }
        guard !Self.containsNUL(key) else { return false }  // never stored (checkStorable)
        try flushStagedWrites()
        let removal = try indexCall {
            try index.write { db in try DiskCacheIndex.remove(db, key: key) }
        }
        files.remove(removal.files)
        accessLog.withLock { _ = $0.removeValue(forKey: key) }
        return removal.count > 0
    }

    /// Removes every value.
    ///
    /// A mount point inside the cache's directory (`data/`, `tmp/` or a hash subdirectory, of
    /// another file system or a bind mount of the same one) keeps its files, as
    /// `rm --one-file-system` does: the entries are gone from the index, and the report names the
    /// mount point (`"skipped: another file system"`, `ClearReport.Failure.isOtherFileSystem`).
    ///
    /// - Returns: The entries removed (`removedCount`) and the mount points left in
    ///   place (`failures`); `bytesFreed` is the size of the values.
    @discardableResult
    public func removeAll() async throws -> ClearReport {
        try await BlockingWork.run { try self.removeAll() }
    }

    /// The synchronous overload of `removeAll()`: the same work on the calling thread.
    ///
    /// Every handle of the cache, in this process and others, sees the clear before its next
    /// read: memory tiers over it (``HybridCache``, the HTTP cache) drop what they hold, and
    /// writes another process staged before the clear are dropped instead of committed.
    @discardableResult
    public func removeAll() throws -> ClearReport {
        // Before the generation moves: a closed handle must not clear other handles' memory tiers.
        if lifecycle.load(ordering: .acquiring) == Lifecycle.closed { throw closedError() }
        try flushStagedWrites()
        accessLog.withLock { $0.removeAll() }
        // Before, so memory tiers stop serving at once; after, so none keeps a value it read
        // back from the index while the rows were going.
        storeGeneration.advance()
        defer { storeGeneration.advance() }
        var report = ClearReport(path: directory.fileSystemPath)
        while true {
            let removal = try indexCall {
                try index.write { db in try DiskCacheIndex.remove(db, where: "1", limit: 1_000) }
            }
            for mount in files.remove(removal.files) {
                let skipped = ClearReport.Failure(path: mount, message: FileSystemBoundary.skipMessage)
                if !report.failures.contains(skipped) { report.failures.append(skipped) }
            }
            report.removedCount += removal.count
            report.bytesFreed += ByteCount(removal.bytes)
            if removal.count == 0 { break }
        }
        // Mounts whose rows orphan collection dropped at open are left in place just the same.
        for mount in files.mountPoints() {
            let skipped = ClearReport.Failure(path: mount, message: FileSystemBoundary.skipMessage)
            if !report.failures.contains(skipped) { report.failures.append(skipped) }
        }
        return report
    }

    // MARK: - Size

    /// The number of entries and the bytes of their values, from the index (no directory walk).
    /// Expired entries count until a trim removes them.
    public func usage() throws -> (count: Int, size: ByteCount) {
        try flushStagedWrites()
        let totals = try indexCall { try index.totals() }
        return (totals.count, ByteCount(totals.size))
    }

    /// See ``usage()``.
    public func usage() async throws -> (count: Int, size: ByteCount) {
        try await BlockingWork.run { try self.usage() }
    }

    /// Hits, misses, writes and evictions since the cache was opened in this process.
    public var statistics: CacheStatistics { counters.statistics }

    /// Writes access times recorded by reads to the index now (they are otherwise written in
    /// batches and before each trim).
    public func flushAccessLog() throws {
        let pending = takeAccessLog()
        try indexCall { try index.recordAccesses(pending) }
    }

    /// Empties the buffered access times and returns them.
    func takeAccessLog() -> [String: Double] {
        accessLog.withLock { log in
            let pending = log
            log.removeAll(keepingCapacity: true)
            return pending
        }
    }

    // MARK: - Internals shared with the extensions

    /// Runs an index operation, turning SQLite's errors into `StowageError`.
    ///
    /// Damage the operation meets goes to the corrupt-index policy
    /// (``recoverFromDamage(_:seenResets:)``); when that empties the index, the operation runs
    /// once more, on the fresh index (a read then misses, a write is stored).
    func indexCall<T>(_ body: () throws -> T) throws -> T {
        if lifecycle.load(ordering: .acquiring) == Lifecycle.closed { throw closedError() }
        if storeGeneration.isRetired { throw removedError() }
        let resets = indexResets.load(ordering: .acquiring)
        do {
            return try body()
        } catch let error as DatabaseError {
            guard Self.isDamage(error), recoverFromDamage(error, seenResets: resets) else {
                throw StowageError.index(error, path: index.path)
            }
        }
        do {
            return try body()
        } catch let error as DatabaseError {
            throw StowageError.index(error, path: index.path)
        }
    }

    /// ``indexCall(_:)-(()->T)`` for a body that suspends; the recovery runs on a lane.
    func indexCall<T>(_ body: () async throws -> T) async throws -> T {
        if lifecycle.load(ordering: .acquiring) == Lifecycle.closed { throw closedError() }
        if storeGeneration.isRetired { throw removedError() }
        let resets = indexResets.load(ordering: .acquiring)
        do {
            return try await body()
        } catch let error as DatabaseError {
            guard Self.isDamage(error), await BlockingWork.run({ self.recoverFromDamage(error, seenResets: resets) })
            else { throw StowageError.index(error, path: index.path) }
        }
        do {
            return try await body()
        } catch let error as DatabaseError {
            throw StowageError.index(error, path: index.path)
        }
    }

    func isExpired(_ entry: DiskCacheIndex.Entry, key: String, now: Double) -> Bool {
        if let expires = entry.expires, expires <= now { return true }
        guard let maximumAge = configuration.maximumAge?.timeInterval else { return false }
        let reference: Double
        switch configuration.ageBasis {
        case .created: reference = entry.created
        case .modified: reference = entry.modified
        case .accessed:
            let pending = accessLog.withLock { $0[key] }
            reference = max(entry.accessed, pending ?? 0)
        }
        return reference < now - maximumAge
    }

    /// Buffers `key`'s access time; a full buffer is written to the index on the maintenance
    /// lane, so no read waits for a write (or runs one on a cooperative thread).
    func recordAccess(key: String, at time: Double) {
        // A read racing close(): its access time is dropped rather than left for no flush.
        guard lifecycle.load(ordering: .relaxed) == Lifecycle.open else { return }
        let shouldFlush = accessLog.withLock { log in
            log[key] = time
            return log.count == Self.accessLogFlushCount
        }
        if shouldFlush {
            maintenance.schedule(.accessLogFlush) { [weak self] in try self?.flushAccessLog() }
        }
    }

    /// A file that vanished or has the wrong length: drop its row (only if it still points there).
    /// Whether `value` has the checksum its row recorded (rows from before format 3 have none).
    static func checksumMatches(_ value: Data, _ entry: DiskCacheIndex.Entry) -> Bool {
        guard let expected = entry.checksum else { return true }
        return CRC32C.checksum(value) == expected
    }

    /// Removes a value found damaged on read — garbled bytes, a file of the wrong length, or a
    /// link, FIFO or device in its file's place — and counts it. Only the version that was
    /// read goes: a value rewritten meanwhile has another `modified` time and stays.
    func discardDamaged(key: String, entry: DiskCacheIndex.Entry, reason: String, isDamage: Bool = true) throws {
        if isDamage { counters.recordDamaged() }
        configuration.logger.log(
            level: isDamage ? .warning : .debug,
            "discarding a damaged cache value",
            metadata: [
                "key": "\(key)", "file": "\(entry.file ?? "inline")", "reason": "\(reason)",
                "cache": "\(configuration.name)",
            ]
        )
        // A staged write that failed its checks was never committed: it leaves the staging only.
        if let staged = staging?.discard(key: key, modified: entry.modified) {
            files.remove(staged.map { [$0] } ?? [])
            return
        }
        let removal = try indexCall {
            try index.write { db in
                try DiskCacheIndex.remove(
                    db,
                    where: "key = ? AND modified = ? AND file IS ?",
                    arguments: [key, entry.modified, entry.file]
                )
            }
        }
        files.remove(removal.files)
    }
}

extension StowageError {
    /// An index error from SQLite, with the code and advice that fit it.
    static func index(_ error: DatabaseError, path: String) -> StowageError {
        switch error.resultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            StowageError(
                code: .corrupt,
                message: "the disk cache index '\(path)' is damaged (\(error.message ?? "\(error.resultCode)")); "
                    + "remove the cache directory, or open it with corruptIndexPolicy .rebuild",
                path: path,
                cause: error
            )
        case .SQLITE_FULL:
            StowageError(
                code: .noSpace,
                message: "the disk cache index '\(path)' cannot grow: the volume is full; free space",
                path: path,
                cause: error
            )
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN:
            StowageError(
                code: .permissionDenied,
                message:
                    "cannot open or write the disk cache index '\(path)': \(error.message ?? "\(error.resultCode)"); "
                    + "check the owner and mode of the cache directory",
                path: path,
                cause: error
            )
        default:
            StowageError(
                code: .ioError,
                message: "the disk cache index '\(path)' failed: \(error.message ?? "\(error.resultCode)")",
                path: path,
                cause: error
            )
        }
    }
}
