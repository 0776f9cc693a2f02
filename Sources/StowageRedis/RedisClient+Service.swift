import ServiceLifecycle

extension RedisClient: Service {
    /// Keeps the client until the task is cancelled or its service group shuts down gracefully,
    /// then closes its connections (``shutdown()``); swift-service-lifecycle's `Service`.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

extension RedisClusterClient: Service {
    /// Keeps the client until the task is cancelled or its service group shuts down gracefully,
    /// then closes its connections to every node (``shutdown()``).
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
