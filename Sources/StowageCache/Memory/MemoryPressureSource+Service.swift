import ServiceLifecycle

extension MemoryPressureSource: Service {
    /// Watches the system's memory pressure until the task is cancelled or its service group
    /// shuts down gracefully, then stops (swift-service-lifecycle's `Service`).
    ///
    /// - Throws: What ``start()`` throws: `StowageError` `.unsupported` where the platform
    ///   offers no signal.
    public func run() async throws {
        try start()
        defer { stop() }
        try? await gracefulShutdown()
    }
}
