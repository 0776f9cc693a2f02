import ServiceLifecycle
import Synchronization

/// The invalidations a cache hears from its shared level, applied while the cache runs
/// (`HybridCache.run()`, `HTTPCache.run()`).
///
/// The subscription is made with the feed, when the cache is created: what other nodes send
/// before the first run is buffered by the tier and applied when the run begins, so a cache
/// whose run starts a little later misses nothing. A later run subscribes afresh, and since
/// what was sent while no run listened is unknown, it begins with
/// ``SharedCacheInvalidation/all``: memory is dropped and older disk copies are confirmed
/// before use.
package final class InvalidationFeed: Sendable {
    private let shared: any SharedCacheTier
    /// The subscription made at creation, until the first run takes it.
    private let firstSubscription: Mutex<AsyncStream<SharedCacheInvalidation>?>

    /// Subscribes to `shared`'s invalidations now.
    package init(shared: any SharedCacheTier) {
        self.shared = shared
        firstSubscription = Mutex(shared.invalidations())
    }

    /// Applies invalidations with `apply`, in order, until the task is cancelled, its service
    /// group shuts down gracefully, or the tier shuts down (nothing more can arrive).
    package func run(applying apply: (SharedCacheInvalidation) async -> Void) async {
        let invalidations: AsyncStream<SharedCacheInvalidation>
        if let first = firstSubscription.withLock({ $0.take() }) {
            invalidations = first
        } else {
            invalidations = shared.invalidations()
            await apply(.all)
        }
        for await invalidation in invalidations.cancelOnGracefulShutdown() {
            await apply(invalidation)
        }
    }

    /// Waits, with no shared level to listen to, until the task is cancelled or its service
    /// group shuts down gracefully: a cache without one is a service that has nothing to do.
    package static func idle() async {
        try? await gracefulShutdown()
    }
}
