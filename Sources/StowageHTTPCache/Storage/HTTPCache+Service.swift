import ServiceLifecycle
import StowageCache

extension HTTPCache: Service {
    /// Applies the invalidations other nodes send through ``Configuration/sharedTier`` until
    /// the task is cancelled, its service group shuts down gracefully, or the shared level
    /// shuts down (swift-service-lifecycle's `Service`); without a shared level it waits for the
    /// first two. `StowageProxy`'s proxy runs its cache itself.
    ///
    /// Another node's change drops the record or body from memory and disk. Invalidations sent
    /// since the cache was opened are applied when the first run begins; a later run cannot know
    /// what was sent while none listened, so it starts as after a gap: memory is dropped and
    /// records on disk are confirmed against the shared level before their next use.
    ///
    /// When the service group shuts down gracefully, the run ends by closing the cache
    /// (`close()`), so what is staged for the disk is committed before the process exits.
    /// Cancelled or ended by the shared level instead, it leaves the cache open.
    public func run() async throws {
        await applyInvalidations()
        if Task.isShuttingDownGracefully { try await close() }
    }

    /// ``run()`` without the closing: for an owner that closes the cache itself once the
    /// users of the cache have stopped (`StowageProxy`'s proxy, after its listeners drain).
    package func applyInvalidations() async {
        await levels.run(banning: applyBan, heard: order)
    }
}
