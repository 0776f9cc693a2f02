import Synchronization

/// How often each key reached the origin with a storable response, for
/// ``HTTPCache/Configuration/minimumUses``: in memory, bounded, forgotten on restart (as
/// nginx keeps its counts in shared memory).
final class UseCounter: Sendable {
    /// Keys counted at most; past it the counts start over, so a flood of one-off URLs cannot
    /// grow memory.
    static let capacity = 100_000

    private let counts = Mutex<[String: Int]>([:])

    /// Counts one more use of `key`; returns the count so far.
    func record(_ key: String) -> Int {
        counts.withLock { counts in
            if counts.count >= Self.capacity, counts[key] == nil { counts.removeAll(keepingCapacity: true) }
            counts[key, default: 0] += 1
            return counts[key]!
        }
    }
}
