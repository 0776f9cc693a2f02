import Dispatch
import Synchronization

/// The look-ups of spilled answers' records that time called for, not a change
/// (``SpilledAnswer/recheckSecond(after:fingerprint:)``), made on a lane of their own instead of
/// on the event loop serving the hit.
///
/// Such a look-up confirms that the disk still holds the records an answer was worked out from
/// (the disk level may have trimmed them for its capacity) and rewrites the record's access
/// time, so the trim keeps what is served. Made by the hit itself, on the event loop, it read
/// pages of the disk index nobody had read since the answer was spilled: a proxy serving 10^5
/// URLs from the spill, whose answers came due within one minute ten minutes after its warm-up,
/// went from a p99 of 5 ms to 15–30 ms for that minute, its event loops off the CPU more than
/// before (`Benchmarks/README.md`). The hit is served (nothing changed since the answer was last
/// checked: the levels' change count says so) and the look-up queued here; an answer whose
/// records are gone is taken out of memory when the lane gets to it. A change — a store, a
/// removal, a purge, a clear — is still checked on the hit itself, before anything is sent.
///
/// The lane works in bursts of ``burst`` look-ups and rests nine times as long as each burst
/// took (``restFactor``; a second at most, ``longestRest``), so it takes about a tenth of a core
/// and holds one for well under a millisecond at a time. Unpaced, it took 14% of the proxy's CPU for the minutes its answers
/// came due and the event loops waited for a core behind it: p99 5 → 7–25 ms at 10^5 URLs on
/// two cores (`Benchmarks/README.md`, "2026-12-01"). Nothing waits for a look-up but the access
/// time it rewrites and a trim it notices, so later is as good as now.
final class SpilledAnswerRechecks: Sendable {
    /// A look-up waiting for the lane: the record key, the answer's memory key and the answer.
    struct Recheck: Sendable {
        let recordKey: String
        let memoryKey: String
        let answer: SpilledAnswer
    }

    private struct State {
        var pending: [Recheck] = []
        var isDraining = false
        /// Callers of ``waitUntilMade()``, resumed when the lane next runs out of look-ups.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// At most this many wait; an answer due when they are waits for a later hit. Bounds what
    /// the queue holds outside the memory level's capacity to 256 keys and references.
    static let pendingLimit = 256

    /// How many look-ups the lane makes before it rests.
    static let burst = 16

    /// How many times as long as a burst took the lane rests after it.
    static let restFactor: UInt64 = 9

    /// The longest the lane rests, in nanoseconds: a burst slowed by a starved thread or a slow
    /// disk does not park the lane for long.
    static let longestRest: UInt64 = 1_000_000_000

    private let state = Mutex(State())
    private let lane = DispatchQueue(label: "stowage.http-cache.spilled-answer-rechecks", qos: .utility)

    /// Queues `recheck`, which `check` makes on the lane; `false` when ``pendingLimit`` wait
    /// already (nothing queued).
    func enqueue(_ recheck: Recheck, check: @escaping @Sendable (Recheck) -> Void) -> Bool {
        let startsDrain: Bool? = state.withLock { state in
            guard state.pending.count < Self.pendingLimit else { return nil }
            state.pending.append(recheck)
            let starts = !state.isDraining
            state.isDraining = true
            return starts
        }
        guard let startsDrain else { return false }
        if startsDrain { lane.async { self.drain(check) } }
        return true
    }

    /// Drops the look-ups waiting (memory was emptied: their answers are gone, and their keys
    /// are of what was cleared). A burst being made goes on; it can only take answers out.
    func removeAllPending() {
        state.withLock { $0.pending.removeAll() }
    }

    /// How many look-ups wait now.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Returns once the lane has run out of look-ups: every one queued before the call has been
    /// made (or dropped by ``removeAllPending()``).
    func waitUntilMade() async {
        await withCheckedContinuation { continuation in
            let isIdle = state.withLock { state in
                if !state.isDraining { return true }
                state.waiters.append(continuation)
                return false
            }
            if isIdle { continuation.resume() }
        }
    }

    /// Makes one burst, then rests before the next, or stops when none wait.
    private func drain(_ check: @escaping @Sendable (Recheck) -> Void) {
        let burst = state.withLock { state in
            let count = min(Self.burst, state.pending.count)
            let burst = Array(state.pending.prefix(count))
            state.pending.removeFirst(count)
            return burst
        }
        let started = DispatchTime.now().uptimeNanoseconds
        for recheck in burst { check(recheck) }
        let took = DispatchTime.now().uptimeNanoseconds - started
        let waiters: [CheckedContinuation<Void, Never>]? = state.withLock { state in
            guard state.pending.isEmpty else { return nil }
            state.isDraining = false
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        guard let waiters else {
            let rest = DispatchTimeInterval.nanoseconds(
                Int(clamping: min(took, Self.longestRest / Self.restFactor) * Self.restFactor)
            )
            lane.asyncAfter(deadline: .now() + rest) { self.drain(check) }
            return
        }
        for waiter in waiters { waiter.resume() }
    }
}
