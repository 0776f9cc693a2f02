import Foundation
import NIOCore
import NIOPosix
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Testing

@Suite(
    "RedisClient.taskExecutor",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisTaskExecutorTests {
    @Test("a task on the executor runs on the event loop that every connection of the client lives on")
    func connectionsLiveOnTheExecutorsLoop() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
        var configuration = server.configuration
        configuration.eventLoopGroup = group
        configuration.maximumConnections = 6
        configuration.multiplexedConnections = 2
        let client = RedisClient(configuration: configuration)
        let executorLoop = try #require(
            await Task(executorPreference: client.taskExecutor) { MultiThreadedEventLoopGroup.currentEventLoop }.value,
            "a task on the executor did not run on an event loop"
        )
        #expect(group.makeIterator().contains { $0 === executorLoop })
        // Three connections leased at once are three different connections, on one loop: each
        // holder keeps its connection until all three hold one.
        let (held, holding) = AsyncStream.makeStream(of: ObjectIdentifier.self)
        let release = Gate()
        let loops = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { tasks in
            for _ in 0..<3 {
                tasks.addTask {
                    try await client.withConnection { connection in
                        holding.yield(ObjectIdentifier(connection))
                        await release.wait()
                        return ObjectIdentifier(connection.closeFuture.eventLoop)
                    }
                }
            }
            var connections: Set<ObjectIdentifier> = []
            for await connection in held {
                connections.insert(connection)
                if connections.count == 3 { break }
            }
            #expect(client.connectionCount >= 3)
            release.open()
            return try await tasks.reduce(into: [ObjectIdentifier]()) { $0.append($1) }
        }
        #expect(Set(loops) == [ObjectIdentifier(executorLoop)])
        // A second client takes the group's next loop, so clients spread over the group.
        let other = RedisClient(configuration: configuration)
        let otherLoop = await Task(executorPreference: other.taskExecutor) {
            MultiThreadedEventLoopGroup.currentEventLoop
        }.value
        #expect(otherLoop !== executorLoop)
        await client.shutdown()
        await other.shutdown()
        try await group.shutdownGracefully()
    }

    @Test("16 tasks on the executor interleave pipelines, single commands and error replies, each getting its own")
    func concurrentCallersOnTheExecutor() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        defer { Task { await client.shutdown() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<16 {
                group.addTask(executorPreference: client.taskExecutor) {
                    for round in 0..<150 {
                        let key = "x:\(caller):\(round % 5)"
                        let value = String(repeating: Character(UnicodeScalar(UInt8(97 + caller))), count: round * 13)
                        let replies = try await client.pipeline([
                            .set(key, value: RedisArgument(value)), .get(key), RedisCommand("INCR", RedisArgument(key)),
                            .get("x:missing"),
                        ])
                        #expect(replies[0] == .simpleString("OK"))
                        #expect(replies[1].string == value)
                        // Letters are no integer: an error reply, returned as a value in its place.
                        #expect(replies[2].errorMessage?.contains("not an integer") == true)
                        #expect(replies[3] == .null)
                        let counted = try await client.send(RedisCommand("INCR", RedisArgument("n:\(caller)")))
                        #expect(counted == .integer(Int64(round + 1)))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test(
        "tasks on the executor fail, and do not hang, when the server goes away; they work again after it returns",
        .timeLimit(.minutes(5))
    )
    func serverGoesAwayAndReturns() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.reconnectBackoff = .init(initial: .milliseconds(10), maximum: .milliseconds(50))
        // The backoff waits on a clock the test moves: while the server is down every command
        // fails at once; after the restart, one advance lets the next command reconnect.
        let backoff = SteppedClock()
        configuration.backoffClock = backoff
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        try await client.send(.ping)
        // Callers on the executor wait in BLPOP-free pipelines while the server is killed: it is
        // killed once every caller has had a reply, so all of them are mid-loop.
        let (answered, answering) = AsyncStream.makeStream(of: Void.self)
        // Each caller runs until the server's death reaches it: a bounded loop could end before
        // the kill on a starved test task (seen once: a caller finished its 10,000 rounds first);
        // a caller that never fails is a hang the suite's time limit reports.
        let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
            for caller in 0..<8 {
                group.addTask(executorPreference: client.taskExecutor) {
                    var round = 0
                    do {
                        while true {
                            _ = try await client.pipeline([.set("k\(caller)", value: RedisArgument("\(round)")), .ping])
                            if round == 0 { answering.yield() }
                            round += 1
                        }
                    } catch let error as RedisError {
                        return [.connectionClosed, .connectionFailed].contains(error.code) ? "failed" : "\(error)"
                    }
                }
            }
            var callers = 0
            for await _ in answered {
                callers += 1
                if callers == 8 { break }
            }
            server.kill()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(
            outcomes.allSatisfy { $0 == "failed" },
            "every caller should fail with a connection error once the server dies: \(outcomes)"
        )
        try await server.start()
        // Past the longest backoff delay and its 20% jitter: the next command reconnects.
        backoff.advance(by: configuration.reconnectBackoff.maximum * 2)
        let reply = try await Task(executorPreference: client.taskExecutor) { try await client.send(.ping) }.value
        #expect(reply == .simpleString("PONG"), "a task on the executor should reach the restarted server")
    }

    @Test("shutting the client down fails waiting tasks on its executor instead of leaving them suspended")
    func shutdownWithCallersWaiting() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        // One shared connection, open before the server hangs, so the pipeline waits on it.
        var configuration = server.configuration
        configuration.multiplexedConnections = 1
        // An hour: a caller that fails before then was failed by the shutdown, however slowly a
        // loaded machine runs; the cut-off below turns a caller left waiting into a failure.
        configuration.commandTimeout = .seconds(3_600)
        let client = RedisClient(configuration: configuration)
        try await client.send(.ping)
        server.suspend()
        defer { server.resume() }
        let waiting = Task(executorPreference: client.taskExecutor) {
            try await client.pipeline([.ping, .get("a")])
        }
        // The pipeline reached the hung server (PING, 14 bytes, and GET a, 20, in one write).
        try await eventually { try server.unreadBytes() == [34] }
        await client.shutdown()
        let failure = await outcome(within: .seconds(120)) { try await waiting.value }
        #expect(redisCode(failure) == .connectionClosed, "\(String(describing: failure))")
    }
}
