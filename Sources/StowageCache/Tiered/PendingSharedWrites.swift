import Synchronization

/// Changes a node made while its shared level did not answer, to send when it answers again
/// (what FusionCache calls auto-recovery): writes, removals and bans.
///
/// Without them the change would never leave the node: the other nodes would keep serving
/// the older value (or, for a removal or a ban, the purged one), and the node itself would have
/// its newer disk copy replaced by the shared level's older one when the copy is confirmed
/// after the outage (``InvalidationHorizon``). Only keys and prefixes are kept: a replayed write
/// sends whatever the disk tier holds for the key then.
///
/// This is the one outage queue of the levels: the HTTP cache's purges and bans and the
/// ``HybridCache``'s writes all wait here, so every path that removes something shared is
/// replayed the same way (the shared tier keeps no queue of its own).
package final class PendingSharedWrites: Sendable {
    /// What the shared level has not yet been told about a key or a prefix.
    package enum Change: Sendable, Equatable {
        /// The key was written locally.
        case set
        /// The key was removed locally.
        case remove
        /// Every key under the prefix was banned locally
        /// (``SharedCacheTier/invalidate(keysWithPrefix:)``).
        case ban
    }

    /// A change waiting to be sent; `sequence` tells a later change of the same key from it.
    /// For a ``Change/ban``, `key` is the banned prefix.
    package struct Pending: Sendable {
        package var key: String
        package var change: Change
        package var sequence: UInt64
    }

    /// A key's changes and a prefix's ban are kept apart: a ban of `img/` is not a change of
    /// the key `img/`.
    ///
    /// Names are told apart by their UTF-8 bytes, as the disk level, the shared level and the
    /// bans' reach (``KeyPrefix``) tell them, not by `String`'s canonical equivalence: with it,
    /// a ban of `"\u{E9}"` replaced a waiting ban of `"e\u{301}"` (which covers other keys), and
    /// the sent one was taken out of ``State/bannedPrefixes`` under the other spelling, leaving
    /// its keys read as changed for good.
    private struct Subject: Hashable {
        var name: String
        var isPrefix: Bool

        init(_ name: String, change: Change) {
            self.name = name
            isPrefix = change == .ban
        }

        static func == (lhs: Subject, rhs: Subject) -> Bool {
            lhs.isPrefix == rhs.isPrefix && lhs.name.utf8.elementsEqual(rhs.name.utf8)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(isPrefix)
            for byte in name.utf8 { hasher.combine(byte) }
        }
    }

    private struct State {
        var changes: [Subject: Pending] = [:]
        /// The prefixes of the bans among `changes`, for ``change(forKey:)``: found in one pass
        /// over a key, however many wait (tried one by one, 10,000 bans cost a read 0.2 ms).
        var bannedPrefixes = KeyPrefixSet()
        var nextSequence: UInt64 = 0

        mutating func remove(_ subject: Subject) {
            changes.removeValue(forKey: subject)
            if subject.isPrefix { bannedPrefixes.remove(subject.name) }
        }
    }

    private let state = Mutex(State())
    private let count = Atomic<Int>(0)
    /// Most keys and prefixes kept; changes past it stay local (the caller logs that).
    package let limit: Int

    package init(limit: Int) {
        self.limit = limit
    }

    /// How many keys and prefixes are waiting.
    package var waitingCount: Int { count.load(ordering: .acquiring) }

    /// Whether nothing is waiting: one atomic load, for the paths every read takes.
    package var isEmpty: Bool { waitingCount == 0 }

    /// Records `change` of `key` (of the prefix `key`, for a ban), replacing an earlier one.
    /// Returns `false` when `limit` subjects are already waiting and this one is not among
    /// them: a write or removal then stays local.
    ///
    /// A ban past the limit is widened instead: it is kept as a ban of the empty prefix (every
    /// key), which may take one place past the limit and is moved after every change waiting.
    /// Dropped, it would leave the other nodes serving what it removed (an invalidation is
    /// final); widened, they drop everything they hold of the cache, which costs refills only.
    /// A limit of 0 keeps nothing, bans included.
    package func record(_ change: Change, forKey key: String) -> Bool {
        state.withLock { state in
            var subject = Subject(key, change: change)
            if state.changes[subject] == nil, state.changes.count >= limit {
                guard change == .ban, limit > 0 else { return false }
                subject = Subject("", change: .ban)
            }
            state.nextSequence += 1
            state.changes[subject] = Pending(key: subject.name, change: change, sequence: state.nextSequence)
            if subject.isPrefix { state.bannedPrefixes.insert(subject.name) }
            count.store(state.changes.count, ordering: .releasing)
            return true
        }
    }

    /// The shared level took a newer change of `key` (a ban of the prefix `key`, when
    /// `isPrefix`): nothing of it is waiting any more.
    package func settle(_ key: String, isPrefix: Bool = false) {
        guard !isEmpty else { return }
        let subject = Subject(key, change: isPrefix ? .ban : .set)
        state.withLock { state in
            state.remove(subject)
            count.store(state.changes.count, ordering: .releasing)
        }
    }

    /// The change of `key` the shared level has not taken yet: its own write or removal, else
    /// `.ban` when a ban of a prefix of `key` waits (the shared level may still hold what the
    /// ban removed), else `nil`. A prefix covers the keys the levels drop for it (``KeyPrefix``).
    package func change(forKey key: String) -> Change? {
        guard !isEmpty else { return nil }
        return state.withLock { state in
            if let own = state.changes[Subject(key, change: .set)]?.change { return own }
            return state.bannedPrefixes.covers(key) ? .ban : nil
        }
    }

    /// Whether `pending` still waits: neither sent, settled, nor replaced by a later change.
    package func isWaiting(_ pending: Pending) -> Bool {
        state.withLock { $0.changes[Subject(pending.key, change: pending.change)]?.sequence == pending.sequence }
    }

    /// Every waiting change, oldest first.
    package func snapshot() -> [Pending] {
        state.withLock { Array($0.changes.values) }.sorted { $0.sequence < $1.sequence }
    }

    /// Forgets `pending` once sent, unless a later change of its key replaced it meanwhile.
    package func sent(_ pending: Pending) {
        let subject = Subject(pending.key, change: pending.change)
        state.withLock { state in
            guard state.changes[subject]?.sequence == pending.sequence else { return }
            state.remove(subject)
            count.store(state.changes.count, ordering: .releasing)
        }
    }
}
