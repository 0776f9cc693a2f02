import ServiceLifecycle
import StowageHTTPCache

extension CachingProxy: Service {
    /// Serves until the task is cancelled or its service group shuts down gracefully (signals
    /// are the group's to handle); then stops accepting, lets requests in flight finish, and
    /// closes the cache and the upstream client. swift-service-lifecycle's `Service`:
    ///
    /// ```swift
    /// let group = ServiceGroup(services: [proxy, monitor], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        try await run(handlingSignals: false)
    }
}

/// The proxy cache's invalidation feed as a service, without the close that `HTTPCache.run()`
/// ends a graceful shutdown with: the proxy closes the cache after its listeners stop.
struct CacheInvalidations: Service {
    let cache: HTTPCache

    func run() async throws {
        await cache.applyInvalidations()
    }
}
