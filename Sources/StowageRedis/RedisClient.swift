import Logging
import Metrics
import NIOCore
import Tracing

/// A client for one Redis (or Valkey, or any RESP server): pooled, pipelined connections,
/// RESP3 with RESP2 fallback, TLS for `rediss://`.
///
/// Concurrent ``send(_:)`` and ``pipeline(_:)`` calls share a few connections
/// (``RedisConfiguration/multiplexedConnections``): their commands leave together in one write
/// and their replies arrive together, which roughly halves the system calls per command on both
/// sides. Blocking commands (`BLPOP`, `WAIT`, `XREAD`…) and connection-state commands (`SELECT`,
/// `MULTI`…) get a connection of their own.
///
/// ```swift
/// let redis = try RedisClient(url: "redis://127.0.0.1:6379/0")
/// try await redis.send(.set("greeting", value: "hello", expiry: .seconds(30)))
/// let reply = try await redis.send(.get("greeting"))      // .bulkString("hello")
/// let replies = try await redis.pipeline([.get("a"), .get("b")])
/// await redis.shutdown()
/// ```
///
/// Metrics (swift-metrics, dimension `server`): `stowage_redis_commands_total`,
/// `stowage_redis_failures_total` (with `code`).
public final class RedisClient: RedisCommandExecuting {
    /// The configuration every connection uses.
    public let configuration: RedisConfiguration
    let pool: RedisConnectionPool
    /// The subscriptions ``subscribe(to:)`` made, which ``shutdown()`` ends.
    let subscriptions = RedisSubscriptions()

    /// The executor of the event loop this client's connections live on.
    ///
    /// Callers that mostly talk to Redis run faster on it: their commands are written and their
    /// replies resumed on the thread that reads the socket, with no hand-over between threads per
    /// call. On this machine that takes 16 callers' pipelines of 1 KiB `SET`s from about 0.55× to
    /// about 1.0× of `redis-benchmark -P 16` (`stowage-bench --filter shared-tier`).
    ///
    /// ```swift
    /// try await withThrowingTaskGroup(of: Void.self) { group in
    ///     for batch in batches {
    ///         group.addTask(executorPreference: redis.taskExecutor) {
    ///             _ = try await redis.pipeline(batch)
    ///         }
    ///     }
    ///     try await group.waitForAll()
    /// }
    /// ```
    ///
    /// Such a task must not block (no blocking file or lock waits, no long computations, no
    /// pipelines of many thousands of commands, which are encoded where the caller runs): while
    /// it runs, no reply on any of the client's connections is read. Tasks on other executors
    /// are unaffected and may use the client as before.
    ///
    /// Shut the client down and let the tasks on this executor finish before the event loop
    /// group shuts down. A job that reaches the executor after that runs on the global
    /// concurrent executor, since the loop no longer runs anything; the client itself cannot
    /// open connections on a group that is gone.
    public let taskExecutor: any TaskExecutor
    private let commands: Counter

    /// A client for `configuration`'s server. Connections open on first use, all of them on one
    /// event loop of `configuration.eventLoopGroup` (``taskExecutor``'s).
    public init(configuration: RedisConfiguration) {
        self.configuration = configuration
        // One loop for every connection: a task on `taskExecutor` then finds each connection's
        // channel on its own thread, whichever connection the pool hands it.
        let eventLoop = configuration.eventLoopGroup.next()
        var placed = configuration
        placed.eventLoopGroup = eventLoop
        taskExecutor = RedisEventLoopExecutor(eventLoop)
        pool = RedisConnectionPool(configuration: placed)
        commands = Counter(label: "stowage_redis_commands_total", dimensions: [("server", configuration.address)])
    }

    /// A client for a `redis://` or `rediss://` URL (see ``RedisConfiguration/init(url:)``).
    public convenience init(url: String) throws {
        self.init(configuration: try RedisConfiguration(url: url))
    }

    /// Sends `command` on a shared connection (one of its own for blocking commands) and returns
    /// the server's reply; a server error reply is thrown as ``RedisError`` `.server`.
    @discardableResult
    public func send(_ command: RedisCommand) async throws -> RESPValue {
        commands.increment()
        return try await configuration.activeTracer.withSpanIfTracing(RedisTracing.SpanName.command, ofKind: .client) {
            span in
            span.recordRedis([command], server: configuration)
            do {
                return try await pool.withSharedConnection(exclusive: command.needsOwnConnection) {
                    try await $0.send(command)
                }
            } catch {
                recordFailure(error)
                throw error
            }
        }
    }

    /// Sends `commands` on one connection in one write; replies in order, error replies as values.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RESPValue] {
        self.commands.increment(by: Int64(commands.count))
        return try await configuration.activeTracer.withSpanIfTracing(RedisTracing.SpanName.pipeline, ofKind: .client) {
            span in
            span.recordRedis(commands, server: configuration)
            do {
                return try await pool.withSharedConnection(exclusive: commands.contains { $0.needsOwnConnection }) {
                    try await $0.pipeline(commands)
                }
            } catch {
                recordFailure(error)
                throw error
            }
        }
    }

    /// Runs `body` with one connection to itself (for `MULTI`/`EXEC`, `WATCH`, or ordered pipelines).
    public func withConnection<T: Sendable>(_ body: (RedisConnection) async throws -> T) async throws -> T {
        try await pool.withConnection(body)
    }

    /// A subscription to `channels` on a connection of its own, resubscribing after reconnects,
    /// until it is cancelled or the client shuts down (its ``RedisSubscription/events`` then finish).
    public func subscribe(to channels: [String]) -> RedisSubscription {
        subscriptions.add(
            RedisSubscription(channels: channels, configuration: configuration) { [configuration] in [configuration] }
        )
    }

    /// The configuration the client opens its connections with: ``configuration`` on the
    /// client's one event loop. A connection opened beside the pool's (the shared tier's tracking
    /// connection) uses it to live on that loop too, where ``taskExecutor``'s tasks run.
    package var connectionConfiguration: RedisConfiguration { pool.configuration }

    /// Open connections, idle and in use.
    public var connectionCount: Int { pool.connectionCount }

    /// Closes every connection and ends every subscription; later commands fail with
    /// ``RedisError/Code/shutdown``. A connection a caller holds (``withConnection(_:)``, a blocking
    /// command) closes when the caller gives it back; ``run()`` waits for that too.
    public func shutdown() async {
        subscriptions.shutdown()
        await pool.shutdown()
    }

    private func recordFailure(_ error: any Error) {
        let code = (error as? RedisError)?.code.description ?? "other"
        Counter(label: "stowage_redis_failures_total", dimensions: [("server", configuration.address), ("code", code)])
            .increment()
    }
}
