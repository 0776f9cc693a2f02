import ServiceLifecycle

extension StorageMonitor: Service {
    /// Checks every ``Configuration/interval`` until the task is cancelled or its service group
    /// shuts down gracefully, then stops (swift-service-lifecycle's `Service`).
    ///
    /// ```swift
    /// let group = ServiceGroup(services: [monitor, pressure], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        start()
        defer { stop() }
        try? await gracefulShutdown()
    }
}
