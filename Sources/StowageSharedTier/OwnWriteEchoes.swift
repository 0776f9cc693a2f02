import NIOCore
import Synchronization

/// Writes of this node whose invalidation may come back to it through its own tracking
/// connection, with the value each left in Redis (`nil` for a removal).
///
/// `NOLOOP` holds back the invalidations of a tracking connection's own writes, but a node hears
/// two kinds of its own writes anyway:
/// - Fenced sets: in broadcast mode Redis attributes a write made inside `EVAL` to the script
///   engine's client, not to the connection that ran the script (seen on Redis 7.0.15; plain
///   `SET`/`DEL` and `MULTI` are held back as documented).
/// - Writes sent through the pool while the tracking connection is being re-established: the
///   server may already track for the new connection, and to it the pool is another client.
///
/// Skipping "the next invalidation of that key" could swallow another client's write that landed
/// in the same event loop turn, which Redis reports in the same message; so the tier reads the
/// key once and skips the invalidation only if Redis still holds what this node left there.
/// A write the server did not track leaves its expectation behind; the list is bounded and
/// emptied at every gap.
final class OwnWriteEchoes: Sendable {
    private let pending = Mutex<[String: [ByteBuffer?]]>([:])
    /// Keys with expectations past which all are forgotten (a forgotten echo only drops a local
    /// copy that the next read fetches again).
    static let keyLimit = 4_096

    /// Registers the write of `entry` (`nil`: a removal) before it is sent: its echo can arrive
    /// before the reply is seen.
    func expect(_ entry: ByteBuffer?, forKey key: String) {
        pending.withLock { pending in
            if pending[key] == nil, pending.count >= Self.keyLimit { pending.removeAll() }
            pending[key, default: []].append(entry)
        }
    }

    /// Withdraws `entry` when the write did not happen (refused or failed).
    func withdraw(_ entry: ByteBuffer?, forKey key: String) {
        pending.withLock { pending in
            guard let index = pending[key]?.firstIndex(of: entry) else { return }
            pending[key]?.remove(at: index)
            if pending[key]?.isEmpty == true { pending[key] = nil }
        }
    }

    /// The oldest write expected for `key`, removed: `.some(nil)` for a removal, `nil` when none
    /// is expected.
    func take(forKey key: String) -> ByteBuffer?? {
        pending.withLock { pending in
            guard var entries = pending[key], !entries.isEmpty else { return nil }
            let first = entries.removeFirst()
            pending[key] = entries.isEmpty ? nil : entries
            return .some(first)
        }
    }

    /// Forgets every expected echo: after a gap nothing more of them will come.
    func removeAll() {
        pending.withLock { $0.removeAll() }
    }
}
