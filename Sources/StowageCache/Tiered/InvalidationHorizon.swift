import Foundation
import StowageCore
import Synchronization

/// The moment since which a node has heard every invalidation of its shared level.
///
/// Invalidations are messages: a node that was not listening when one was sent — it was not
/// running yet, or its subscription broke and came back (``SharedCacheInvalidation/all``) —
/// never learns of it, and a local disk copy written before then may be stale for good. A copy
/// stored before the horizon is therefore confirmed against the shared level before it is
/// served (``SharedTierOptions/confirmsDiskCopies``); a copy stored after it is current unless
/// an invalidation says otherwise.
///
/// The horizon starts when the cache is created (disk copies from an earlier run are confirmed),
/// moves to the present each time invalidations may have been missed, and is cleared when the
/// shared level itself lost its values (nothing is left to confirm against).
package final class InvalidationHorizon: Sendable {
    private let clock: CacheClock
    /// Seconds since 1970 as the bit pattern of a `Double`: one atomic load per disk hit.
    private let start: Atomic<UInt64>
    /// Between ``SharedCacheInvalidation/interrupted`` and the `.all` or `.emptied` that ends
    /// the gap: nothing is confirmed, since the shared level may have come back empty.
    private let isInterrupted = Atomic<Bool>(false)

    /// A horizon at the present moment of `clock` (the disk cache's clock, which dates entries).
    package init(clock: CacheClock) {
        self.clock = clock
        start = Atomic(clock.now().timeIntervalSince1970.bitPattern)
    }

    /// Invalidations may have been missed until now.
    private func restart() {
        start.store(clock.now().timeIntervalSince1970.bitPattern, ordering: .releasing)
    }

    /// Every copy is current: the shared level lost its values, so there is nothing to confirm
    /// copies against (``SharedCacheInvalidation/emptied``).
    private func clear() {
        start.store((-Double.infinity).bitPattern, ordering: .releasing)
    }

    /// Moves the horizon for an invalidation that reports a gap: `.interrupted` suspends
    /// confirmation, `.all` restarts the horizon and `.emptied` clears it (both resume
    /// confirmation); `.key` and `.prefix` leave it alone.
    package func apply(_ invalidation: SharedCacheInvalidation) {
        switch invalidation {
        case .key, .prefix: break
        case .interrupted: isInterrupted.store(true, ordering: .releasing)
        case .all:
            restart()
            isInterrupted.store(false, ordering: .releasing)
        case .emptied:
            clear()
            isInterrupted.store(false, ordering: .releasing)
        }
    }

    /// Whether a copy stored at `modified` must be confirmed before it is served: it was stored
    /// before the horizon, and no gap is under way (during one it is served unconfirmed).
    package func requiresConfirmation(ofCopyStoredAt modified: Date) -> Bool {
        !isInterrupted.load(ordering: .acquiring)
            && modified.timeIntervalSince1970 < Double(bitPattern: start.load(ordering: .acquiring))
    }
}
