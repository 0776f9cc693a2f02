import ServiceLifecycle

extension CachingProxy: Service {
    /// Serves until the task is cancelled or its service group shuts down gracefully (signals
    /// are the group's to handle); then stops accepting, lets requests in flight finish, and
    /// closes the upstream client. swift-service-lifecycle's `Service`:
    ///
    /// ```swift
    /// let group = ServiceGroup(services: [proxy, monitor], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        try await run(handlingSignals: false)
    }
}
