import StowageCore
import StowageRedis
import Synchronization

/// Bounds calls by one budget with a single timer for all of them: the calls in flight sit in a
/// table (deadline and the caller's continuation), and one watchdog task, running only while the
/// table is not empty, fails those whose deadline has passed.
///
/// A timer task per call cost more than the Redis call it bounded: with 16 callers making
/// 1 KiB `GET`s, `perf` showed the cooperative pool spending about 30 µs of CPU per call on
/// task creation, dispatch's timer heap and context switches (813k of them for 300k calls).
///
/// The watchdog sleeps until the earliest deadline in the table, with a tolerance of an eighth of
/// the budget so the system may coalesce its wake-ups: every call that runs out of its budget is
/// failed between `budget` and `budget + budget / 8` after it began, plus however late the
/// cooperative pool runs the watchdog. Calls never fail early. All calls share one budget, so a
/// call that starts while the watchdog sleeps has a later deadline than the one it sleeps until,
/// and the watchdog does not need waking. Under steady traffic it wakes about once per budget; it
/// exits the first time it wakes to an empty table, so an idle tier (a phone in the background)
/// has no wake-ups at all.
final class BudgetWatchdog: Sendable {
    private struct Call {
        /// Time on ``clock`` at which the call runs out of its budget.
        let deadline: Duration
        let waiter: any ExpiringWaiter
    }

    private struct State {
        var calls: [UInt64: Call] = [:]
        var nextID: UInt64 = 0
        /// Whether a watchdog task runs: `true` whenever `calls` is not empty.
        var isWatching = false
    }

    /// Longest one call may take.
    let budget: Duration
    /// What the budget is measured by: real time (``RedisSharedTier/Options/requestBudgetClock``),
    /// or a clock a test advances.
    private let clock: ElapsedClock
    private let state = Mutex(State())

    init(budget: Duration, clock: ElapsedClock = .continuous) {
        self.budget = budget
        self.clock = clock
    }

    /// Whether the watchdog task runs now (tests check that it stops once no call is in flight).
    var isWatching: Bool { state.withLock { $0.isWatching } }

    /// How many calls are in flight now.
    var callsInFlight: Int { state.withLock { $0.calls.count } }

    /// How many calls have started since the watchdog was made (tests tell a call that waited
    /// for Redis from one that failed at once).
    var callsStarted: UInt64 { state.withLock { $0.nextID } }

    /// `body`'s result, or a `.timeout` error once the budget has passed; `body` then goes on in
    /// the background until its own command timeout ends it (a NIO send does not stop on task
    /// cancellation), its result dropped.
    ///
    /// `body` runs in a task of its own so the caller can return before it does: in the caller's
    /// task it would hold the caller until the send ends, and cancelling does not end a send.
    ///
    /// The caller's continuation is resumed exactly once. It is stored only in the call's table
    /// entry, which is inserted before the body task exists (so before anything can look for it),
    /// and resumed only by whoever removes that entry under the lock: the body task when it
    /// finishes, or the watchdog once the deadline has passed. The lock lets one of them remove
    /// it; the other finds it gone and does nothing. Neither can be skipped: the body task always
    /// ends in `finish`, and the watchdog runs while the table holds any entry (it clears
    /// ``isWatching`` only under the lock, on an empty table, and `register` starts a new one
    /// under the same lock) and cannot be cancelled (nothing holds its task). Debug builds use a
    /// checked continuation, which traps on a second resume, so the tests would catch a broken
    /// proof.
    func within<T: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withBudgetContinuation { (continuation: BudgetContinuation<T>) in
            let id = register(Waiter(continuation: continuation, operation: operation))
            // Not `Task.immediate` (starting `body` on this thread up to its send): measured
            // no faster on `shared-tier.get-1KiB` (median of three runs 12.3 µs per GET against 10.0).
            Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                if self.finish(id) { continuation.resume(with: result) }
            }
        }
    }

    private func register(_ waiter: some ExpiringWaiter) -> UInt64 {
        let (id, startsWatching) = state.withLock { state in
            let id = state.nextID
            state.nextID &+= 1
            state.calls[id] = Call(deadline: clock.now + budget, waiter: waiter)
            defer { state.isWatching = true }
            return (id, !state.isWatching)
        }
        if startsWatching { Task { await self.watch() } }
        return id
    }

    /// Removes call `id`; `true` if it was still waiting (its caller is now the finisher's to resume).
    private func finish(_ id: UInt64) -> Bool {
        state.withLock { $0.calls.removeValue(forKey: id) != nil }
    }

    private func watch() async {
        let tolerance = budget / 8
        while true {
            let (expired, wake) = state.withLock { state -> ([any ExpiringWaiter], Duration?) in
                guard !state.calls.isEmpty else {
                    state.isWatching = false
                    return ([], nil)
                }
                let now = clock.now
                var expired: [any ExpiringWaiter] = []
                var earliest: Duration?
                for (id, call) in state.calls {
                    if call.deadline <= now {
                        expired.append(call.waiter)
                        state.calls[id] = nil
                    } else if earliest.map({ call.deadline < $0 }) ?? true {
                        earliest = call.deadline
                    }
                }
                // An empty table after expiring: one more wake-up (a budget later at most) finds
                // it empty and exits, so a caller that follows at once does not start a new task.
                return (expired, earliest ?? now + budget)
            }
            for waiter in expired { waiter.expire(budget: budget) }
            guard let wake else { return }
            // Nothing cancels this task (nothing holds it); if something did, the sleep would
            // return at once and the loop spin until the table empties, still failing every call.
            try? await clock.sleep(until: wake, tolerance: tolerance)
        }
    }
}

/// A caller waiting in the table, with what to tell it when its budget runs out.
private protocol ExpiringWaiter: Sendable {
    func expire(budget: Duration)
}

/// Fits an existential's inline buffer (a continuation and a string: three words), so the table
/// stores it without allocating.
private struct Waiter<T: Sendable>: ExpiringWaiter {
    let continuation: BudgetContinuation<T>
    let operation: String

    func expire(budget: Duration) {
        continuation.resume(
            throwing: RedisError(
                code: .timeout,
                message: "Redis did not answer \(operation) within the shared tier's request budget "
                    + "(\(budget)); raise RedisSharedTier.Options.requestBudget if Redis is slow "
                    + "rather than hung"
            )
        )
    }
}

#if DEBUG
private typealias BudgetContinuation<T> = CheckedContinuation<T, any Error>

private func withBudgetContinuation<T: Sendable>(_ body: (BudgetContinuation<T>) -> Void) async throws -> T {
    try await withCheckedThrowingContinuation(body)
}
#else
private typealias BudgetContinuation<T> = UnsafeContinuation<T, any Error>

private func withBudgetContinuation<T: Sendable>(_ body: (BudgetContinuation<T>) -> Void) async throws -> T {
    try await withUnsafeThrowingContinuation(body)
}
#endif
