import Synchronization

/// Removals and bans this node could not send because Redis did not answer, to send when it
/// answers again.
///
/// A purge that never leaves the node leaves every other node serving the purged copy until it
/// expires. The caches above keep their own writes for later (`PendingSharedWrites`), but the
/// HTTP cache's purges and every ban go through the tier only, so the tier keeps them here.
/// A later successful write of the same key, here or heard from another node, supersedes a
/// waiting removal: sending it afterwards would delete the newer value.
final class PurgeOutbox: Sendable {
    /// What must reach every node.
    enum Purge: Hashable, Sendable {
        /// A removed key.
        case key(String)
        /// A ban of every key under the prefix.
        case prefix(String)
    }

    /// Most purges kept; the oldest go first past it (each is logged when recorded).
    static let limit = 10_000
    private let waiting = Mutex<[Purge]>([])
    private let count = Atomic<Int>(0)

    /// Whether nothing waits: one atomic load on the write path.
    var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }

    /// Keeps `purge` for later (once: a purge waiting already keeps its place).
    func record(_ purge: Purge) {
        waiting.withLock { waiting in
            guard !waiting.contains(purge) else { return }
            if waiting.count >= Self.limit { waiting.removeFirst() }
            waiting.append(purge)
            count.store(waiting.count, ordering: .releasing)
        }
    }

    /// Forgets a waiting removal of `key`: a newer write or removal of it reached Redis.
    func settle(key: String) {
        guard !isEmpty else { return }
        remove(.key(key))
    }

    /// Forgets `purge` (sent, or superseded).
    func remove(_ purge: Purge) {
        waiting.withLock { waiting in
            waiting.removeAll { $0 == purge }
            count.store(waiting.count, ordering: .releasing)
        }
    }

    /// Whether `purge` still waits.
    func contains(_ purge: Purge) -> Bool {
        waiting.withLock { $0.contains(purge) }
    }

    /// Every waiting purge, oldest first.
    func snapshot() -> [Purge] {
        waiting.withLock { $0 }
    }
}
