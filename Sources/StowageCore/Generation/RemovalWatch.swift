import Synchronization

/// What one memory tier last saw of its store's ``StoreRemovals``: it drops what it holds when a
/// value was removed from the store through another handle, in this process or another, since.
///
/// The tier counts its own removals through ``advance()`` (after the disk half of each, which
/// it has already applied to its own memory), so they do not empty it; any other move of the
/// count does. The protocol, for a tier that fills itself from the store:
///
/// ```swift
/// let removals = watch.check { memory.removeAll() }   // before every read
/// if let value = memory.value(forKey: key) { return value }
/// let value = try disk.read(key)
/// memory.setValue(value, forKey: key)
/// if !watch.isCurrent(removals) { memory.removeValue(forKey: key) }   // a removal raced the fill
/// ```
///
/// A check while nothing moved is two loads, one from shared memory; after a move, a lock taken
/// once to tell the tier's own removals from the others'.
package final class RemovalWatch: Sendable {
    /// The count followed.
    package let removals: StoreRemovals
    /// The count as of the last accounting (``check(onOthersRemoval:)``).
    private let seen: Atomic<UInt64>
    /// The count as of the last accounting and this watch's own removals since, which the
    /// lock keeps in step with the shared count.
    private let accounting: Mutex<(seen: UInt64, own: UInt64)>

    package init(_ removals: StoreRemovals) {
        self.removals = removals
        let now = removals.value
        seen = Atomic(now)
        accounting = Mutex((now, 0))
    }

    /// The count now; runs `onOthersRemoval` first when a removal other than this watch's own
    /// was counted since the last check.
    @inline(__always)
    package func check(onOthersRemoval: () -> Void) -> UInt64 {
        let current = removals.value
        if current == seen.load(ordering: .acquiring) { return current }
        return account(onOthersRemoval: onOthersRemoval)
    }

    private func account(onOthersRemoval: () -> Void) -> UInt64 {
        accounting.withLock { state in
            let current = removals.value
            // Every removal of this watch's own since the last accounting was counted under this
            // lock, so the moves beyond them are others'.
            if current &- state.seen > state.own { onOthersRemoval() }
            state = (current, 0)
            seen.store(current, ordering: .releasing)
            return current
        }
    }

    /// Counts a removal of this watch's tier, whose memory already lost the value: every other
    /// handle's tier drops its memory at its next check, this one does not.
    package func advance() {
        accounting.withLock { state in
            removals.advance()
            state.own += 1
        }
    }

    /// Whether no removal was counted since `count` was read (so a value read from the store
    /// then may be kept in memory).
    @inline(__always)
    package func isCurrent(_ count: UInt64) -> Bool {
        removals.value == count
    }
}
