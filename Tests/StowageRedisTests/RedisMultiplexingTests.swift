import Foundation
import NIOCore
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Testing

@Suite("RedisCommand.needsOwnConnection")
struct RedisCommandConnectionNeedsTests {
    @Test("blocking and connection-state commands need a connection of their own; data commands do not")
    func classification() {
        for name in [
            "BLPOP", "blpop", "BZPopMin", "XREAD", "WAIT", "MULTI", "EXEC", "WATCH", "SELECT", "CLIENT", "SUBSCRIBE",
        ] {
            #expect(RedisCommand(name, "x").needsOwnConnection, "\(name)")
        }
        for command in [
            RedisCommand.get("k"), .set("k", value: "v"), .del("k"), .ping, .publish("c", message: "m"),
            .eval("return 1", keys: [], arguments: []), RedisCommand("HGETALL", "h"), RedisCommand("XADD", "s"),
        ] {
            #expect(!command.needsOwnConnection, "\(command)")
        }
    }
}

@Suite(
    "RedisClient multiplexing (auto-pipelining)",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisMultiplexingTests {
    @Test("64 concurrent callers share one connection and each gets its own replies")
    func concurrentCallersShareOneConnection() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.maximumConnections = 4
        configuration.multiplexedConnections = 1
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<64 {
                group.addTask {
                    for round in 0..<100 {
                        let key = "m:\(caller):\(round % 7)"
                        let value = "\(caller)-\(round)-" + String(repeating: "x", count: (caller * 37 + round) % 300)
                        try await client.send(.set(key, value: RedisArgument(value)))
                        let reply = try await client.send(.get(key))
                        #expect(reply.string == value)
                        let counted = try await client.send(
                            RedisCommand("INCR", RedisArgument("n:\(caller)"), keyIndex: 1)
                        )
                        #expect(counted == .integer(Int64(round + 1)))
                        if round % 25 == 0 {
                            let replies = try await client.pipeline([.get(key), .ping, .get("m:missing")])
                            #expect(replies == [.bulkString(ByteBuffer(string: value)), .simpleString("PONG"), .null])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(client.connectionCount == 1)
    }

    @Test(
        "a blocking command gets a connection of its own and holds up no shared caller",
        .timeLimit(.minutes(5))
    )
    func blockingCommandDoesNotHoldUpOthers() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.multiplexedConnections = 1
        // No command timeout a loaded machine could reach: the BLPOP waits until pushed.
        configuration.commandTimeout = .seconds(3_600)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        try await client.send(.ping)
        // The BLPOP never times out (0) and is pushed to only after the SETs: were they queued
        // behind it they would never finish (the time limit catches that hang); on their own
        // connection they finish while it still waits.
        let blocked = Task { try await client.send(RedisCommand("BLPOP", "queue", "0", keyIndex: 1)) }
        try await eventually(timeout: .seconds(300)) {
            try await client.send(RedisCommand("INFO", "clients")).string?.contains("blocked_clients:1") == true
        }
        for index in 0..<200 { try await client.send(.set("k\(index)", value: "v")) }
        #expect(try await client.send(RedisCommand("LLEN", "queue", keyIndex: 1)) == .integer(0))
        #expect(client.connectionCount == 2)
        try await client.send(RedisCommand("LPUSH", "queue", "job", keyIndex: 1))
        #expect(try await blocked.value == .array([.bulkString("queue"), .bulkString("job")]))
    }

    @Test("a shared connection the server closed is replaced; shutdown closes the shared connections")
    func sharedConnectionReplacedAndClosed() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.multiplexedConnections = 2
        let client = RedisClient(configuration: configuration)
        for index in 0..<10 { try await client.send(.set("k\(index)", value: "v")) }
        var observerConfiguration = server.configuration
        observerConfiguration.multiplexedConnections = 0
        observerConfiguration.maximumConnections = 1
        let observer = RedisClient(configuration: observerConfiguration)
        defer { Task { await observer.shutdown() } }
        try await observer.send(RedisCommand("CLIENT", "KILL", "SKIPME", "yes"))
        // The first command may meet the closing connection ("may or may not have run"); the
        // ones after it run on fresh connections.
        var failures = 0
        for index in 0..<20 {
            do { try await client.send(.get("k\(index % 10)")) } catch let error as RedisError {
                #expect(error.code == .connectionClosed)
                failures += 1
            }
        }
        #expect(failures <= 2)
        #expect(client.connectionCount <= 2)
        await client.shutdown()
        #expect(client.connectionCount == 0)
        // The server notices the closes in its own time: wait for its client list to show them.
        try await eventually {
            let list = try await observer.send(RedisCommand("CLIENT", "LIST")).string ?? ""
            return list.split(separator: "\n").count == 1  // only the observer is left connected
        }
        await #expect {
            try await client.send(.ping)
        } throws: { error in
            (error as? RedisError)?.code == .shutdown
        }
    }

    @Test("more shared connections than the pool may open is a typed configuration error")
    func invalidMultiplexedCount() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.maximumConnections = 2
        configuration.multiplexedConnections = 3
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        await #expect {
            try await client.send(.ping)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .invalidURL && error.message.contains("multiplexedConnections")
        }
    }
}

@Suite(
    "RedisClient shutdown during a handshake",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisShutdownDuringHandshakeTests {
    @Test(
        "a caller whose connection is still in its handshake with a hung server fails at shutdown, not at the connect timeout"
    )
    func shutdownClosesConnectionsInTheirHandshake() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        // An hour: a caller that fails with `.shutdown` before then was failed by the shutdown,
        // however slowly a loaded machine runs it; no bound on real time is needed to tell.
        configuration.connectTimeout = .seconds(3_600)
        for shared in [0, 2] {
            configuration.multiplexedConnections = shared
            let client = RedisClient(configuration: configuration)
            // The kernel still accepts connections to a stopped server; HELLO gets no answer.
            server.suspend()
            let callers = (0..<3).map { _ in Task { try await client.send(.ping) } }
            // Every connection being opened has sent its HELLO and waits for the answer: three
            // with no shared connections, one per shared slot (the third caller waits for its
            // slot's) with two.
            let opening = shared == 0 ? 3 : shared
            try await eventually { try server.unreadBytes().count == opening }
            await client.shutdown()
            for caller in callers {
                let error = await #expect(throws: RedisError.self) { try await caller.value }
                #expect(error?.code == .shutdown, "\(String(describing: error))")
            }
            server.resume()
        }
    }
}

@Suite(
    "RedisClient pool wait timeout",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisPoolWaitTimeoutTests {
    @Test("with a zero poolWaitTimeout every caller beyond the pool fails with poolExhausted; none waits on")
    func zeroWaitTimeoutFailsEveryWaiter() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.maximumConnections = 1
        configuration.multiplexedConnections = 0
        configuration.poolWaitTimeout = .zero
        // No command timeout a loaded machine could reach: the BLPOP waits until pushed.
        configuration.commandTimeout = .seconds(3_600)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let observer = RedisClient(configuration: server.configuration)
        defer { Task { await observer.shutdown() } }
        // The pool's one connection stays busy in a BLPOP until the test pushes to its list.
        let blocked = Task { try await client.send(RedisCommand("BLPOP", "never", "0", keyIndex: 1)) }
        try await eventually {
            try await observer.send(RedisCommand("INFO", "clients")).string?.contains("blocked_clients:1") == true
        }
        let callers = Task {
            try await withThrowingTaskGroup(of: RedisError.Code?.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        do {
                            _ = try await client.send(.ping)
                            return nil
                        } catch let error as RedisError {
                            return error.code
                        }
                    }
                }
                return try await group.reduce(into: [RedisError.Code?]()) { $0.append($1) }
            }
        }
        // A waiter the timer missed would wait for the BLPOP to give the connection back, which
        // is only after the push below: the callers would not finish (a hang caught here).
        let finished = await outcome(within: .seconds(120)) { try await callers.value }
        #expect(finished != nil, "a caller waited for the busy connection instead of failing at once")
        try await observer.send(RedisCommand("LPUSH", "never", "job", keyIndex: 1))
        let codes = try await callers.value
        #expect(codes.allSatisfy { $0 == .poolExhausted }, "\(codes)")
        #expect(try await blocked.value == .array([.bulkString("never"), .bulkString("job")]))
    }
}
