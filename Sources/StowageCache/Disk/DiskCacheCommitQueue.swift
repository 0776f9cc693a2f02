import Dispatch
import GRDB
import StowageCore
import Synchronization

/// Group commit for the disk cache's writes: callers that commit at the same time share one
/// SQLite transaction, so eight writers pay for about one commit, not eight.
///
/// The scheme is LevelDB's writer queue. A caller queues its write; if no commit is running it
/// leads: it takes every queued write, commits them in one `IMMEDIATE` transaction, hands each
/// its outcome, and passes the lead to the first write queued meanwhile. The others wait on
/// their own semaphore. A lone writer leads at once and pays nothing extra. A batch that fails
/// as a whole is retried write by write, so one bad write never fails its neighbours and each
/// caller gets its own error.
///
/// A task waits without a thread (``submit(_:)``, ``outcomes(of:)``): it queues its write from
/// the blocking lane that wrote its file, commits the batch there at once when no commit is
/// running, and otherwise is resumed once its batch has committed. A batch handed to a waiting
/// task's write is committed on the queue's own serial dispatch queue, never on a blocking lane
/// or the task's executor, so a commit never waits for a lane or a cooperative thread that
/// writers parked in it hold. A thread parked per waiting
/// write kept about one lane thread per concurrent writer alive, each with its stack and glibc's
/// per-thread cache of freed blocks (33 threads for the proxy under `Benchmarks/proxy-rss.sh`).
final class DiskCacheCommitQueue: Sendable {
    /// One row to upsert.
    struct Write: Sendable {
        var key: String
        var entry: DiskCacheIndex.Entry
    }

    /// What a committed write replaced, and the cache's totals after its transaction.
    struct Outcome: Sendable {
        /// The file of the value this write replaced, to remove now that the commit is durable.
        var replacedFile: String?
        var count: Int
        /// As the cache's ``DiskCache/SizeAccounting`` counts it.
        var size: Int64
        /// What the transaction evicted to stay within a hard size limit, or culled (``Cull``); on
        /// the first outcome of the batch only, so that one caller removes the files.
        var evicted = DiskCacheIndex.Removal()
        /// Why `evicted` went: the count limit or the size limit.
        var evictedFor = EvictionReason.costLimit
        /// Whether this transaction began a cull (the cache went over a limit): the cache checks
        /// its totals row in the background, as a trim does before it evicts.
        var beganCull = false
    }

    /// The limits of ``DiskCache/SizeLimitEnforcement/trimAfterWrite`` (and the count limit),
    /// culled inside the commits that go over them, as python-diskcache's `cull` does inside
    /// `set`'s transaction: the first commit over a limit begins a cull toward ``trimRatio`` of
    /// the limits it passed (YYCache's and SDWebImage's half-the-cap trim), and it and the commits after it each
    /// remove at most ``rowsPerCommit`` least-recently-used rows more than they write, until the
    /// target is reached. The cull is amortised over the writes, with no hand-off to another
    /// thread and no wait for a trim holding the writer; a write that goes further over a limit
    /// than its cull removes is still followed by the background trim.
    struct Cull: Sendable {
        var countLimit: Int?
        /// Bytes, as `accounting` counts them.
        var sizeLimit: Int64?
        var trimRatio: Double
        var accounting: DiskCache.SizeAccounting

        /// Rows a commit may remove beyond the ones it writes. Each costs a few µs (one row and
        /// its index entries deleted in a statement shared with the others); 64 keep the commit
        /// that culls within a fraction of a millisecond, and a cull from the limit to half of it
        /// is spread over (limit / 2) / 64 commits.
        static let rowsPerCommit = 64

        /// Where a cull that begins at `totals` stops: ``trimRatio`` of each limit passed; `nil`
        /// when no limit is passed.
        func target(for totals: (count: Int, size: Int64)) -> Target? {
            let count = countLimit.flatMap { totals.count > $0 ? Int(Double($0) * trimRatio) : nil }
            let size = sizeLimit.flatMap { totals.size > $0 ? Int64(Double($0) * trimRatio) : nil }
            return count == nil && size == nil ? nil : Target(count: count, size: size)
        }

        /// Where a cull stops; each part `nil` when that limit was not passed.
        struct Target: Sendable, Hashable {
            var count: Int?
            var size: Int64?

            func wants(count: Int, size: Int64) -> Bool {
                (self.count.map { count > $0 } ?? false) || (self.size.map { size > $0 } ?? false)
            }
        }
    }

    /// A hard size limit, enforced inside each commit's transaction.
    struct Budget: Sendable {
        /// The most bytes the committed cache may hold.
        var limit: Int64
        /// Where an eviction stops.
        var target: Int64
        var accounting: DiskCache.SizeAccounting
    }

    /// A batch that cannot fit the budget even with everything else evicted.
    struct OverBudget: Error {}

    final class Ticket: @unchecked Sendable {
        // `outcomes` and `leads` are written by the leader before `wake()`, and read by the owner
        // once woken, or once it led the batch itself.
        let writes: [Write]
        var outcomes: Result<[Outcome], any Error>?
        var leads = false
        /// Whether a task owns the ticket (it awaits ``woken()``), not a parked thread.
        let isTask: Bool
        private let done = DispatchSemaphore(value: 0)
        private let wakeState = Mutex(WakeState.pending)

        private enum WakeState {
            case pending
            case awaiting(CheckedContinuation<Void, Never>)
            case woken
        }

        init(_ writes: [Write], isTask: Bool) {
            self.writes = writes
            self.isTask = isTask
        }

        /// Wakes the owner once: its batch committed, or (a thread's) it leads now.
        func wake() {
            guard isTask else {
                done.signal()
                return
            }
            let waiter = wakeState.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state = .woken }
                if case .awaiting(let continuation) = state { return continuation }
                return nil
            }
            waiter?.resume()
        }

        /// Parks the owner's thread until ``wake()``.
        func wait() { done.wait() }

        /// Suspends the owning task until ``wake()``; returns at once if it came already.
        func woken() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let already = wakeState.withLock { state -> Bool in
                    if case .woken = state { return true }
                    state = .awaiting(continuation)
                    return false
                }
                if already { continuation.resume() }
            }
        }
    }

    /// A task's writes, queued by ``submit(_:)``.
    struct Submission: Sendable {
        let ticket: Ticket
        /// Whether the submitting thread committed their batch itself.
        let wasLed: Bool
    }

    private struct State {
        var queued: [Ticket] = []
        var isCommitting = false
        /// Tickets in the batch committing now, until the next is taken.
        var committing = 0
    }

    private let index: DiskCacheIndex
    private let budget: Budget?
    private let cull: Cull?
    /// The cull in progress; only read and written inside a commit's transaction.
    private let cullTarget = Mutex<Cull.Target?>(nil)
    /// Whether the `totals` row has been checked against the rows since the cache opened (its
    /// integrity check, or a trim's): until then a commit over a limit leaves the eviction to
    /// the background trim, which checks the row first, rather than cull on its word.
    let totalsAreVerified = Atomic<Bool>(false)
    /// Takes the access times reads buffered (`DiskCache.accessLog`): a cull writes them before it
    /// evicts, as a trim does, so a value read since its last write is not taken for unused.
    private let accessSource = Mutex<(@Sendable () -> [String: Double])?>(nil)

    /// Sets where a cull takes the buffered access times from.
    func setAccessSource(_ source: @escaping @Sendable () -> [String: Double]) {
        accessSource.withLock { $0 = source }
    }
    private let accounting: DiskCache.SizeAccounting
    /// Called by the leader after each batch (the cache counts commits toward a checkpoint).
    private let afterCommit: @Sendable () -> Void
    private let state = Mutex(State())
    /// Where batches led by a task's write commit (``commit(_:)-async``).
    private let leadQueue = DispatchQueue(label: "org.stowage.disk-cache.commit")
    /// Writes per transaction at most, so one commit stays short.
    private static let batchLimit = 512

    init(
        index: DiskCacheIndex,
        budget: Budget? = nil,
        cull: Cull? = nil,
        accounting: DiskCache.SizeAccounting = .logical,
        afterCommit: @escaping @Sendable () -> Void = {}
    ) {
        self.index = index
        self.budget = budget
        self.cull = cull
        self.accounting = accounting
        self.afterCommit = afterCommit
    }

    /// Callers waiting for their commit: queued, or in the batch committing now (for tests).
    var waitingCount: Int { state.withLock { $0.queued.count + $0.committing } }

    /// Commits `writes` (in one transaction with each other, and with whatever other callers
    /// commit at the same time) and returns one outcome per write.
    ///
    /// - Throws: GRDB's `DatabaseError` for this caller's writes only.
    func commit(_ writes: [Write]) throws -> [Outcome] {
        let ticket = Ticket(writes, isTask: false)
        if !enqueue(ticket) {
            ticket.wait()
            guard ticket.leads else { return try ticket.outcomes!.get() }
        }
        lead()
        return try ticket.outcomes!.get()
    }

    /// Queues `writes` for a task, from a blocking lane: when no commit is running, their batch
    /// commits on the calling thread at once, as a waiting thread's does; otherwise the task
    /// awaits ``outcomes(of:)`` holding no thread.
    func submit(_ writes: [Write]) -> Submission {
        let ticket = Ticket(writes, isTask: true)
        guard enqueue(ticket) else { return Submission(ticket: ticket, wasLed: false) }
        lead()
        return Submission(ticket: ticket, wasLed: true)
    }

    /// The outcomes of a ``submit(_:)``, once its batch has committed.
    ///
    /// - Throws: GRDB's `DatabaseError` for this caller's writes only.
    func outcomes(of submission: Submission) async throws -> [Outcome] {
        if !submission.wasLed { await submission.ticket.woken() }
        return try submission.ticket.outcomes!.get()
    }

    /// ``commit(_:)-(_)`` for a task: ``submit(_:)`` on a blocking lane, then its outcomes.
    ///
    /// - Throws: GRDB's `DatabaseError` for this caller's writes only.
    func commit(_ writes: [Write]) async throws -> [Outcome] {
        try await outcomes(of: BlockingWork.run { self.submit(writes) })
    }

    /// Commits the batch that begins with a task's ticket on ``leadQueue``, waking that task too.
    private func leadOnQueue() {
        leadQueue.async { self.lead(wakingFirst: true) }
    }

    /// Queues `ticket`; returns whether it leads (no commit was running).
    private func enqueue(_ ticket: Ticket) -> Bool {
        state.withLock { state in
            state.queued.append(ticket)
            guard !state.isCommitting else { return false }
            state.isCommitting = true
            return true
        }
    }

    /// Commits one batch of queued tickets — the leader's own comes first, since a ticket leads
    /// only when nothing was queued before it — wakes their owners (the first one's too when
    /// `wakingFirst`: a task's, led on ``leadQueue``), and hands the lead to the first ticket
    /// queued meanwhile (a waiting thread leads itself; a task's batch goes to ``leadQueue``),
    /// or gives it up.
    private func lead(wakingFirst: Bool = false) {
        let batch = state.withLock { state in
            var count = 0
            let taken = state.queued.prefix { ticket in
                defer { count += ticket.writes.count }
                return count == 0 || count + ticket.writes.count <= Self.batchLimit
            }
            state.queued.removeFirst(taken.count)
            state.committing = taken.count
            return Array(taken)
        }
        commit(batch)
        afterCommit()
        // Woken before the next batch is taken, so that writers woken here and writing again
        // at once join it: the batches stay as large as the writers are many.
        for ticket in wakingFirst ? batch[...] : batch.dropFirst() { ticket.wake() }
        let next = state.withLock { state in
            state.committing = 0
            if state.queued.isEmpty { state.isCommitting = false }
            return state.queued.first
        }
        guard let next else { return }
        if !next.isTask {
            next.leads = true
            next.wake()
        } else {
            leadOnQueue()
        }
    }

    /// Commits `batch` in one transaction, or ticket by ticket if that fails.
    private func commit(_ batch: [Ticket]) {
        do {
            let outcomes = try index.write { db in try commit(batch.map(\.writes), in: db) }
            for (ticket, outcome) in zip(batch, outcomes) { ticket.outcomes = .success(outcome) }
        } catch {
            for ticket in batch {
                ticket.outcomes = Result { try index.write { db in try commit([ticket.writes], in: db)[0] } }
            }
        }
    }

    /// Upserts `groups` of writes in the caller's transaction, evicting first when they would take
    /// the cache over its ``Budget``; one outcome per write, per group.
    ///
    /// - Throws: ``OverBudget`` when the writes cannot fit even with every other entry evicted
    ///   (the transaction then rolls back).
    private func commit(_ groups: [[Write]], in db: Database) throws -> [[Outcome]] {
        let replaced = try groups.map { writes in
            try writes.map { try DiskCacheIndex.upsert(db, key: $0.key, entry: $0.entry) }
        }
        var evicted = DiskCacheIndex.Removal()
        var evictedFor = EvictionReason.costLimit
        var beganCull = false
        if let cull {
            (evicted, evictedFor, beganCull) = try self.cull(cull, in: db, sparing: Set(groups.joined().map(\.key)))
        }
        if let budget, try DiskCacheIndex.totals(db, accounting: budget.accounting).size > budget.limit {
            let written = Set(groups.joined().map(\.key))
            let eviction = try DiskCacheIndex.evict(
                db,
                downTo: budget.target,
                accounting: budget.accounting,
                sparing: written
            )
            evicted.count += eviction.removal.count
            evicted.files += eviction.removal.files
            evicted.bytes += eviction.removal.bytes
            evictedFor = .costLimit
            if !eviction.reached, try DiskCacheIndex.totals(db, accounting: budget.accounting).size > budget.limit {
                throw OverBudget()
            }
        }
        let totals = try DiskCacheIndex.totals(db, accounting: accounting)
        var outcomes = replaced.map { files in
            files.map { Outcome(replacedFile: $0, count: totals.count, size: totals.size) }
        }
        if !outcomes.isEmpty, !outcomes[0].isEmpty {
            outcomes[0][0].evicted = evicted
            outcomes[0][0].evictedFor = evictedFor
            outcomes[0][0].beganCull = beganCull
        }
        return outcomes
    }

    /// The cull of one commit (``Cull``), after its upserts and inside its transaction: begins
    /// one when the cache is over a limit, then removes up to the rows written plus
    /// ``Cull/rowsPerCommit`` least-recently-used rows (never one of `written`) toward its
    /// target. Ends the cull at the target, or when no more rows can go.
    private func cull(
        _ cull: Cull,
        in db: Database,
        sparing written: Set<String>
    ) throws -> (removal: DiskCacheIndex.Removal, reason: EvictionReason, began: Bool) {
        var target = cullTarget.withLock { $0 }
        var began = false
        if target == nil {
            guard totalsAreVerified.load(ordering: .acquiring),
                let new = cull.target(for: try DiskCacheIndex.totals(db, accounting: cull.accounting))
            else { return (.init(), .costLimit, false) }
            target = new
            began = true
        }
        guard let target else { return (.init(), .costLimit, false) }
        if let accesses = accessSource.withLock({ $0 })?(), !accesses.isEmpty {
            try DiskCacheIndex.recordAccesses(db, accesses)
        }
        let before = try DiskCacheIndex.totals(db, accounting: cull.accounting)
        let reason: EvictionReason = target.count.map { before.count > $0 } ?? false ? .countLimit : .costLimit
        let batch = try DiskCacheIndex.evictBatch(
            db,
            after: DiskCacheIndex.EvictionCursor(),
            limit: written.count + Cull.rowsPerCommit,
            accounting: cull.accounting,
            sparing: written,
            // Inside the commit's transaction the statement journal stays in memory only below
            // 64 KiB (see `DiskCacheIndex.evictionWrite`): 16 rows of 1 KiB and their index pages.
            rowsPerStatement: 16
        ) { count, size in target.wants(count: count, size: size) }
        // A rollback leaves the cull on; the next commit goes on from the rows as they are.
        cullTarget.withLock { $0 = batch.isDone ? nil : target }
        return (batch.removal, reason, began)
    }

    /// The target of the cull in progress, if any: a trim goes down to it (it is a trim spread
    /// over the writes) and ends it.
    func takeCullTarget() -> Cull.Target? {
        cullTarget.withLock { target in
            defer { target = nil }
            return target
        }
    }
}
