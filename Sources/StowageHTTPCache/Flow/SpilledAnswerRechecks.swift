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
    }

    /// At most this many wait; an answer due when they are waits for a later hit. Bounds what
    /// the queue holds outside the memory level's capacity to 256 keys and references.
    static let pendingLimit = 256

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
    /// are of what was cleared). One being made goes on; it can only take an answer out.
    func removeAllPending() {
        state.withLock { $0.pending.removeAll() }
    }

    /// How many look-ups wait now.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Returns once every look-up queued before the call has been made.
    func waitUntilMade() async {
        await withCheckedContinuation { continuation in lane.async { continuation.resume() } }
    }

    private func drain(_ check: (Recheck) -> Void) {
        while true {
            let batch = state.withLock { state in
                let batch = state.pending
                state.pending.removeAll(keepingCapacity: true)
                if batch.isEmpty { state.isDraining = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            for recheck in batch { check(recheck) }
        }
    }
}
