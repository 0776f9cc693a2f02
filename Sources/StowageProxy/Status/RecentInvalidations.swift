import Foundation
import Synchronization

/// The latest purges and bans taken by the admin listener, newest first, for the status page:
/// at most ``capacity``, each target cut to ``maximumTargetLength`` characters (a purge target
/// is whatever URL the caller sent).
final class RecentInvalidations: Sendable {
    /// How many are kept.
    let capacity: Int
    /// The longest target kept, in characters; a longer one ends with `…`.
    static let maximumTargetLength = 256
    private let entries: Mutex<[Entry]>

    /// One purge or ban.
    struct Entry: Sendable, Hashable {
        var time: Date
        var kind: ProxyMetrics.PurgeKind
        var target: String
        var removed: Int
    }

    init(capacity: Int = 20) {
        precondition(capacity > 0, "capacity needs to be > 0")
        self.capacity = capacity
        entries = Mutex([])
    }

    func record(_ kind: ProxyMetrics.PurgeKind, target: String, removed: Int, at time: Date) {
        let entry = Entry(time: time, kind: kind, target: Self.bounded(target), removed: removed)
        entries.withLock { entries in
            entries.insert(entry, at: 0)
            if entries.count > capacity { entries.removeLast(entries.count - capacity) }
        }
    }

    /// The kept entries, newest first.
    var all: [Entry] { entries.withLock { $0 } }

    /// `target`, cut to ``maximumTargetLength`` characters.
    static func bounded(_ target: String) -> String {
        guard target.count > maximumTargetLength else { return target }
        return String(target.prefix(maximumTargetLength - 1)) + "…"
    }
}
