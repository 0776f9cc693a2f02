import Dispatch
import GRDB
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
        /// What the transaction evicted to stay within a hard size limit; on the first outcome of
        /// the batch only, so that one caller removes the files.
        var evicted = DiskCacheIndex.Removal()
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

    private final class Ticket: @unchecked Sendable {
        // Written by the leader before `done.signal()`, read by the owner after `done.wait()`.
        let writes: [Write]
        var outcomes: Result<[Outcome], any Error>?
        var leads = false
        let done = DispatchSemaphore(value: 0)
        init(_ writes: [Write]) { self.writes = writes }
    }

    private struct State {
        var queued: [Ticket] = []
        var isCommitting = false
    }

    private let index: DiskCacheIndex
    private let budget: Budget?
    private let accounting: DiskCache.SizeAccounting
    /// Called by the leader after each batch (the cache counts commits toward a checkpoint).
    private let afterCommit: @Sendable () -> Void
    private let state = Mutex(State())
    /// Writes per transaction at most, so one commit stays short.
    private static let batchLimit = 512

    init(
        index: DiskCacheIndex,
        budget: Budget? = nil,
        accounting: DiskCache.SizeAccounting = .logical,
        afterCommit: @escaping @Sendable () -> Void = {}
    ) {
        self.index = index
        self.budget = budget
        self.accounting = accounting
        self.afterCommit = afterCommit
    }

    /// Commits `writes` (in one transaction with each other, and with whatever other callers
    /// commit at the same time) and returns one outcome per write.
    ///
    /// - Throws: GRDB's `DatabaseError` for this caller's writes only.
    func commit(_ writes: [Write]) throws -> [Outcome] {
        let ticket = Ticket(writes)
        let leads = state.withLock { state in
            state.queued.append(ticket)
            guard !state.isCommitting else { return false }
            state.isCommitting = true
            return true
        }
        if !leads {
            ticket.done.wait()
            guard ticket.leads else { return try ticket.outcomes!.get() }
        }
        lead()
        return try ticket.outcomes!.get()
    }

    /// Commits one batch of queued tickets — the leader's own comes first, since a ticket leads
    /// only when nothing was queued before it — wakes their owners, and hands the lead to the
    /// first ticket queued meanwhile, or gives it up.
    private func lead() {
        let batch = state.withLock { state in
            var count = 0
            let taken = state.queued.prefix { ticket in
                defer { count += ticket.writes.count }
                return count == 0 || count + ticket.writes.count <= Self.batchLimit
            }
            state.queued.removeFirst(taken.count)
            return Array(taken)
        }
        commit(batch)
        afterCommit()
        for ticket in batch.dropFirst() { ticket.done.signal() }
        let next = state.withLock { state in
            if state.queued.isEmpty { state.isCommitting = false }
            return state.queued.first
        }
        if let next {
            next.leads = true
            next.done.signal()
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
        if let budget, try DiskCacheIndex.totals(db, accounting: budget.accounting).size > budget.limit {
            let written = Set(groups.joined().map(\.key))
            let eviction = try DiskCacheIndex.evict(
                db,
                downTo: budget.target,
                accounting: budget.accounting,
                sparing: written
            )
            evicted = eviction.removal
            if !eviction.reached, try DiskCacheIndex.totals(db, accounting: budget.accounting).size > budget.limit {
                throw OverBudget()
            }
        }
        let totals = try DiskCacheIndex.totals(db, accounting: accounting)
        var outcomes = replaced.map { files in
            files.map { Outcome(replacedFile: $0, count: totals.count, size: totals.size) }
        }
        if !outcomes.isEmpty, !outcomes[0].isEmpty { outcomes[0][0].evicted = evicted }
        return outcomes
    }
}
