import ServiceLifecycle

extension HybridCache: Service {
    /// Applies the invalidations other nodes send through the shared level until the task is
    /// cancelled, its service group shuts down gracefully, or the shared level shuts down
    /// (swift-service-lifecycle's `Service`); without a shared level it waits for the first two.
    ///
    /// Invalidations sent since the cache was created are applied when the first run begins.
    /// A later run cannot know what was sent while none listened, so it starts as after a gap:
    /// memory is dropped and older disk copies are confirmed before use
    /// (``SharedTierOptions/confirmsDiskCopies``).
    ///
    /// When the service group shuts down gracefully, the run ends by closing the cache
    /// (`close()`), so what is staged for the disk is committed before the process exits.
    /// Cancelled or ended by the shared level instead, it leaves the cache open.
    public func run() async throws {
        await levels.run()
        if Task.isShuttingDownGracefully { try await close() }
    }
}
