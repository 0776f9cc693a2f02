import Synchronization

/// This node's writes that reach the shared level after its own levels, counted per stripe of
/// keys (``CacheLevels/writingEverywhere(_:_:)``).
///
/// A fill from the shared level that read a key before one of these writes reached the shared
/// level holds the value the write replaced; landing after the write's local copies, it would
/// put that older value back in front of it, and a node does not hear its own writes back from
/// the shared level to drop it again. The fill notes the key's stripe before it reads
/// (``stamp(_:)``) and, under the key's lock, keeps nothing when a write of the stripe was under
/// way then or has begun since (``isOvertaken(_:)``). Striped, not per key, so that the counts
/// take fixed memory: a write of another key of the stripe costs a fill its local copy (the next
/// read fills again), never a stale value.
package final class SharedWriteStripes: Sendable {
    /// Where a fill began: its key's stripe, the writes of it begun so far, and whether none was
    /// under way; and whether the fill, found overtaken, kept nothing (``keptNothing``).
    package struct Stamp: Sendable {
        fileprivate let stripe: Int
        fileprivate let begun: UInt64
        fileprivate let wasIdle: Bool
        fileprivate let skipped = Skipped()

        /// Whether the fill's local write found it overtaken and wrote nothing: a copy of the key
        /// here is then not the fill's, and the fill must not drop it as its own (it may be the
        /// only copy of a memory-only write that overtook the fill).
        package var keptNothing: Bool { skipped.flag.load(ordering: .acquiring) }

        /// Notes that the fill kept nothing.
        func markKeptNothing() { skipped.flag.store(true, ordering: .releasing) }
    }

    /// A stamp's note that its fill kept nothing, shared by the stamp's copies.
    fileprivate final class Skipped: Sendable {
        let flag = Atomic<Bool>(false)
    }

    private struct Counts {
        var begun = [UInt64](repeating: 0, count: SharedWriteStripes.stripeCount)
        var underWay = [Int](repeating: 0, count: SharedWriteStripes.stripeCount)
    }

    /// Enough that concurrent writes of other keys seldom share a fill's stripe.
    static let stripeCount = 64
    private let counts = Mutex(Counts())

    /// The stripe of `key` (its hash, fixed for the process).
    private func stripe(of key: String) -> Int {
        Int(UInt(bitPattern: key.hashValue) % UInt(Self.stripeCount))
    }

    /// Counts a write of `key` beginning; returns the stripe to pass to ``end(_:)``.
    func begin(_ key: String) -> Int {
        let stripe = stripe(of: key)
        counts.withLock { counts in
            counts.begun[stripe] &+= 1
            counts.underWay[stripe] += 1
        }
        return stripe
    }

    /// Counts a write begun with ``begin(_:)`` as over.
    func end(_ stripe: Int) {
        counts.withLock { $0.underWay[stripe] -= 1 }
    }

    /// Where a fill of `key` begins: taken before it reads the shared level.
    func stamp(_ key: String) -> Stamp {
        let stripe = stripe(of: key)
        return counts.withLock { counts in
            Stamp(stripe: stripe, begun: counts.begun[stripe], wasIdle: counts.underWay[stripe] == 0)
        }
    }

    /// Whether a write of the fill's stripe was under way when it began, or has begun since: what
    /// it read may be older than that write's local copies.
    func isOvertaken(_ stamp: Stamp) -> Bool {
        !stamp.wasIdle || counts.withLock { $0.begun[stamp.stripe] } != stamp.begun
    }
}
