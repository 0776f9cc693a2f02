import ServiceLifecycle

extension CachingHTTPClient: Service {
    /// Keeps the client until the task is cancelled or its service group shuts down gracefully,
    /// then ``shutdown()``s the AsyncHTTPClient it created (one passed to `init` stays the
    /// caller's to shut down); swift-service-lifecycle's `Service`, as Hummingbird's
    /// `Application` and AsyncHTTPClient's own users run it.
    ///
    /// ```swift
    /// let client = CachingHTTPClient(cache: cache)
    /// let group = ServiceGroup(services: [client, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// A service group shuts its services down in the reverse of their order, so list the
    /// client before the services that send requests through it: they finish first. Requests
    /// sent after the client shut down fail with AsyncHTTPClient's `alreadyShutdown`.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }
}
