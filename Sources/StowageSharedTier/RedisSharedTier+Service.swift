import ServiceLifecycle

extension RedisSharedTier: Service {
    /// Keeps the tier (its subscription, tracking connection and client) until the task is
    /// cancelled or its service group shuts down gracefully, then ``shutdown()``s it;
    /// swift-service-lifecycle's `Service`.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
