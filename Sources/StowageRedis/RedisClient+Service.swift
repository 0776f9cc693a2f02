import ServiceLifecycle

extension RedisClient: Service {
    /// Owns the client's connections for as long as it runs, as valkey-swift's `ValkeyClient.run()`
    /// does: it returns only once every connection the client opened has closed.
    ///
    /// On the service group's graceful shutdown it stops taking commands (they fail with
    /// ``RedisError/Code/shutdown``), closes idle and shared connections and subscriptions
    /// (``shutdown()``), lets callers that hold a connection (``withConnection(_:)``, a blocking
    /// command) finish, closes those connections as they come back, and returns. When the task
    /// is cancelled, or the group cancels it after its graceful-shutdown timeout, it closes
    /// every connection at once: commands still in flight fail with `.connectionClosed`.
    ///
    /// ```swift
    /// let redis = try RedisClient(url: "redis://127.0.0.1:6379")
    /// let group = ServiceGroup(services: [redis, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// List the client before the services that use it: a group shuts its services down in the
    /// reverse of their order, so they are done with Redis when the client closes.
    public func run() async throws {
        try? await gracefulShutdown()
        await withTaskCancellationHandler {
            let subscriptions = self.subscriptions.shutdown()
            await pool.shutdown()
            await pool.closed()
            for subscription in subscriptions { await subscription.finished() }
        } onCancel: {
            pool.closeEveryConnection()
        }
    }
}

extension RedisClusterClient: Service {
    /// Owns the connections to every node for as long as it runs, as ``RedisClient/run()`` does
    /// for one server: on graceful shutdown it closes idle and shared connections and
    /// subscriptions, waits for the connections callers hold, and returns once all have closed;
    /// on cancellation it closes every connection at once.
    public func run() async throws {
        try? await gracefulShutdown()
        let pools = shutDownPools()
        await withTaskCancellationHandler {
            let subscriptions = self.subscriptions.shutdown()
            for pool in pools { await pool.shutdown() }
            for pool in pools { await pool.closed() }
            for subscription in subscriptions { await subscription.finished() }
        } onCancel: {
            for pool in pools { pool.closeEveryConnection() }
        }
    }
}
