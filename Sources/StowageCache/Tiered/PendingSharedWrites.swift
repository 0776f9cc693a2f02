import Synchronization

/// Changes a node made while its shared level did not answer, to send when it answers again
/// (what FusionCache calls auto-recovery).
///
/// Without them the change would never leave the node: the other nodes would keep serving
/// the older value, and the node itself would have its newer disk copy replaced by the shared
/// level's older one when the copy is confirmed after the outage (``InvalidationHorizon``).
/// Only keys are kept: a replayed write sends whatever the disk tier holds for the key then.
package final class PendingSharedWrites: Sendable {
    /// What the shared level has not yet been told about a key.
    package enum Change: Sendable, Equatable {
        /// The key was written locally.
        case set
        /// The key was removed locally.
        case remove
    }

    /// A change waiting to be sent; `sequence` tells a later change of the same key from it.
    package struct Pending: Sendable {
        package var key: String
        package var change: Change
        package var sequence: UInt64
    }

    private struct State {
        var changes: [String: Pending] = [:]
        var nextSequence: UInt64 = 0
    }

    private let state = Mutex(State())
    private let count = Atomic<Int>(0)
    /// Most keys kept; changes past it stay local (the caller logs that).
    package let limit: Int

    package init(limit: Int) {
        self.limit = limit
    }

    /// How many keys are waiting.
    package var waitingCount: Int { count.load(ordering: .acquiring) }

    /// Whether nothing is waiting: one atomic load, for the paths every read takes.
    package var isEmpty: Bool { waitingCount == 0 }

    /// Records `change` of `key`, replacing an earlier one. Returns `false` when `limit` keys
    /// are already waiting and `key` is not one of them: the change then stays local.
    package func record(_ change: Change, forKey key: String) -> Bool {
        state.withLock { state in
            if state.changes[key] == nil, state.changes.count >= limit { return false }
            state.nextSequence += 1
            state.changes[key] = Pending(key: key, change: change, sequence: state.nextSequence)
            count.store(state.changes.count, ordering: .releasing)
            return true
        }
    }

    /// The shared level took a newer change of `key`: nothing of it is waiting any more.
    package func settle(_ key: String) {
        guard !isEmpty else { return }
        state.withLock { state in
            state.changes.removeValue(forKey: key)
            count.store(state.changes.count, ordering: .releasing)
        }
    }

    /// The change waiting for `key`, if any.
    package func change(forKey key: String) -> Change? {
        guard !isEmpty else { return nil }
        return state.withLock { $0.changes[key]?.change }
    }

    /// Whether `pending` still waits: neither sent, settled, nor replaced by a later change.
    package func isWaiting(_ pending: Pending) -> Bool {
        state.withLock { $0.changes[pending.key]?.sequence == pending.sequence }
    }

    /// Every waiting change, oldest first.
    package func snapshot() -> [Pending] {
        state.withLock { Array($0.changes.values) }.sorted { $0.sequence < $1.sequence }
    }

    /// Forgets `pending` once sent, unless a later change of its key replaced it meanwhile.
    package func sent(_ pending: Pending) {
        state.withLock { state in
            guard state.changes[pending.key]?.sequence == pending.sequence else { return }
            state.changes.removeValue(forKey: pending.key)
            count.store(state.changes.count, ordering: .releasing)
        }
    }
}
