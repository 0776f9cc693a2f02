import NIOCore
import Synchronization

/// Values this node stored with the fenced-set script whose invalidation may come back to it.
///
/// `NOLOOP` holds back the invalidations of a tracking connection's own writes — but in
/// broadcast mode Redis attributes a write made inside `EVAL` to the script engine's client,
/// not to the connection that ran the script, so the node hears its own fenced sets (seen on
/// Redis 7.0.15; plain `SET`/`DEL` and `MULTI` are held back as documented). Skipping "the next
/// invalidation of that key" could swallow another client's write that landed in the same event
/// loop turn, which Redis reports in the same message; so the tier reads the key once and skips
/// the invalidation only if Redis still holds the bytes it wrote.
final class ScriptWriteEchoes: Sendable {
    private let pending = Mutex<[String: [ByteBuffer]]>([:])

    /// Registers `entry` before the script is sent (its echo can arrive before the reply is seen).
    func expect(_ entry: ByteBuffer, forKey key: String) {
        pending.withLock { $0[key, default: []].append(entry) }
    }

    /// Withdraws `entry` when the script did not store it (refused or failed).
    func withdraw(_ entry: ByteBuffer, forKey key: String) {
        pending.withLock { pending in
            guard let index = pending[key]?.firstIndex(of: entry) else { return }
            pending[key]?.remove(at: index)
            if pending[key]?.isEmpty == true { pending[key] = nil }
        }
    }

    /// The oldest entry expected for `key`, removed; `nil` when none is.
    func take(forKey key: String) -> ByteBuffer? {
        pending.withLock { pending in
            guard var entries = pending[key], !entries.isEmpty else { return nil }
            let first = entries.removeFirst()
            pending[key] = entries.isEmpty ? nil : entries
            return first
        }
    }

    /// Forgets every expected echo: after a gap nothing more of them will come.
    func removeAll() {
        pending.withLock { $0.removeAll() }
    }
}
