import Logging
import ServiceLifecycle
import StowageRedisTestSupport
import Synchronization
import Testing

@testable import StowageRedis

/// `RedisClient.run()` keeps swift-service-lifecycle's promise: the service owns its connections
/// and returns only once every one of them has closed.
@Suite(
    "RedisClient as a Service",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed"),
    .timeLimit(.minutes(5))
)
struct RedisClientServiceTests {
    func group(_ client: RedisClient) -> ServiceGroup {
        ServiceGroup(
            services: [client],
            gracefulShutdownSignals: [],
            cancellationSignals: [],
            logger: Logger(label: "test", factory: SwiftLogNoOpLogHandler.init)
        )
    }

    /// The connection a caller of `withConnection` holds, for the test to look at.
    final class Held: Sendable {
        let connection = Mutex<RedisConnection?>(nil)
        var isActive: Bool { connection.withLock { $0?.isActive } ?? false }
    }

    @Test("graceful shutdown: a caller holding a connection finishes its command, then run() closes it and returns")
    func gracefulShutdownWaitsForHeldConnections() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        let group = group(client)
        let running = Task { try await group.run() }
        let held = Held()
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let (gate, gateContinuation) = AsyncStream.makeStream(of: Void.self)
        let caller = Task {
            try await client.withConnection { connection in
                held.connection.withLock { $0 = connection }
                startedContinuation.yield()
                for await _ in gate { break }
                return try await connection.send(.ping)
            }
        }
        for await _ in started { break }

        await group.triggerGracefulShutdown()
        // New commands are refused once the shutdown has begun...
        while (try? await client.send(.ping)) != nil { await Task.yield() }
        // ...but the one in flight on a held connection still completes.
        gateContinuation.yield()
        #expect(try await caller.value == .simpleString("PONG"))
        try await running.value
        #expect(!held.isActive, "run() returned with a connection still open")
        #expect(client.connectionCount == 0)
    }

    @Test("cancellation: run() closes a connection a caller holds at once, and a blocked BLPOP fails")
    func cancellationClosesHeldConnections() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        let running = Task { try await group(client).run() }
        let held = Held()
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let blocked = Task {
            try await client.withConnection { connection in
                held.connection.withLock { $0 = connection }
                startedContinuation.yield()
                // Blocks until a value is pushed to the list: never, here.
                return try await connection.send(RedisCommand("BLPOP", "nothing-comes", "0", keyIndex: 1))
            }
        }
        for await _ in started { break }

        running.cancel()
        _ = try? await running.value
        try #require(!held.isActive, "run() returned with the blocked connection still open")
        await #expect(throws: RedisError.self) { try await blocked.value }
    }

    @Test(
        "cancellation: a connection whose handshake ends after run() closed every connection never joins the pool"
    )
    func cancellationClosesConnectionsOpenedLater() async throws {
        // The race an attacker found (1 in ~1,000 cancellations): the cancellation handler listed
        // the connections before the pool was marked shut down, so a connection that finished its
        // handshake in between was handed to a caller, never closed, and run() waited for that
        // caller. Here the handshake ends after the list, for certain: the caller asks for a
        // connection only once every connection was closed.
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        try await client.send(.ping)
        client.pool.closeEveryConnection()
        let error = await #expect(throws: RedisError.self) {
            try await client.withConnection { connection in try await connection.send(.ping) }
        }
        #expect(error?.code == .shutdown, "\(String(describing: error))")
        // Every connection the pool opened has closed (with the race, the late one never would).
        if error?.code == .shutdown { await client.pool.closed() }
    }

    @Test("graceful shutdown ends the client's subscriptions; one made afterwards ends at once")
    func gracefulShutdownEndsSubscriptions() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        let group = group(client)
        let running = Task { try await group.run() }
        let subscription = client.subscribe(to: ["news"])
        for await event in subscription.events {
            if case .subscribed = event { break }
        }

        await group.triggerGracefulShutdown()
        try await running.value
        // The events finish: the subscription ended with the client instead of resubscribing.
        // (Iterated here, in the test's own task, so the suite's time limit ends a hang.)
        for await _ in subscription.events {}
        #expect(!Task.isCancelled, "the subscription outlived the client")
        for await _ in client.subscribe(to: ["later"]).events {
            Issue.record("a subscription made after the shutdown delivered an event")
        }
    }
}
