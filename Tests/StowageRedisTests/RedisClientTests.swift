import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Testing

@Suite(
    "RedisClient against redis-server",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisClientTests {
    @Test("binary values round-trip through the server; typed replies come back")
    func roundTrips() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        defer { Task { await client.shutdown() } }
        var random = SeededRandom(seed: 7)
        for length in [0, 1, 2, 13, 1024, 70_000, 1_000_000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            try await client.send(.set("blob:\(length)", value: RedisArgument(Data(bytes))))
            let reply = try await client.send(.get("blob:\(length)"))
            #expect(reply.bytes.map { Array($0.readableBytesView) } == bytes, "length \(length)")
        }
        #expect(try await client.send(.get("missing")).isNull)
        #expect(try await client.send(RedisCommand("INCRBY", "n", "5", keyIndex: 1)) == .integer(5))
        // RESP3 types arrive as themselves: a map from HGETALL, a double from INCRBYFLOAT's RESP3 sibling.
        try await client.send(RedisCommand("HSET", "h", "f", "v", keyIndex: 1))
        #expect(
            try await client.send(RedisCommand("HGETALL", "h", keyIndex: 1))
                == .map([RESPMapEntry(key: .bulkString("f"), value: .bulkString("v"))])
        )
        try await client.send(RedisCommand("ZADD", "z", "1.5", "m", keyIndex: 1))
        #expect(try await client.send(RedisCommand("ZSCORE", "z", "m", keyIndex: 1)) == .double(1.5))
    }

    @Test("as a Service the client serves until its group shuts down gracefully, then closes its connections")
    func service() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        let group = ServiceGroup(
            services: [client],
            gracefulShutdownSignals: [],
            cancellationSignals: [],
            logger: Logger(label: "test", factory: SwiftLogNoOpLogHandler.init)
        )
        let running = Task { try await group.run() }
        try await client.send(.set("k", value: "v"))
        #expect(client.connectionCount >= 1)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(client.connectionCount == 0)
    }

    @Test("a server error is typed and carries the server's message")
    func serverError() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        defer { Task { await client.shutdown() } }
        try await client.send(.set("text", value: "abc"))
        await #expect {
            try await client.send(RedisCommand("INCR", "text", keyIndex: 1))
        } throws: { error in
            let error = try #require(error as? RedisError)
            return error.code == .server && error.serverMessage?.hasPrefix("ERR value is not an integer") == true
        }
        // The connection stays usable after an error reply.
        #expect(try await client.send(.ping) == .simpleString("PONG"))
    }

    @Test("pipelining: 10,000 commands in one write, replies in order, one error among them")
    func pipelining() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        defer { Task { await client.shutdown() } }
        let count = 10_000
        var commands = (0..<count).map { RedisCommand.set("k\($0)", value: RedisArgument($0)) }
        commands.append(RedisCommand("INCR", "k1x", "extra"))
        commands += (0..<count).map { RedisCommand.get("k\($0)") }
        let replies = try await client.pipeline(commands)
        #expect(replies.count == 2 * count + 1)
        #expect(replies[count].errorMessage != nil)
        #expect((0..<count).allSatisfy { replies[count + 1 + $0].integer == Int64($0) })
        // Concurrent callers each pipeline on their own connections.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<32 {
                group.addTask {
                    let replies = try await client.pipeline((0..<100).map { RedisCommand.get("k\(caller * 100 + $0)") })
                    #expect(replies.enumerated().allSatisfy { $0.element.integer == Int64(caller * 100 + $0.offset) })
                }
            }
            try await group.waitForAll()
        }
        #expect(client.connectionCount <= client.configuration.maximumConnections)
    }

    @Test("TTLs map to PX expiry and keys expire")
    func timeToLive() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        defer { Task { await client.shutdown() } }
        // The 150 ms TTL reaches the server as PX 150, not rounded to whole seconds: its PTTL,
        // read in the same pipeline (the server runs both in one go), is at most 150.
        let short = try await client.pipeline([
            .set("short", value: "v", expiry: .milliseconds(150)), RedisCommand("PTTL", "short", keyIndex: 1),
        ])
        #expect(short[0] == .simpleString("OK"))
        #expect((1...150).contains(short[1].integer ?? 0), "PTTL \(short[1])")
        try await client.send(.set("long", value: "v", expiry: .seconds(60)))
        let ttl = try await client.send(RedisCommand("PTTL", "long", keyIndex: 1)).integer ?? 0
        #expect(ttl > 50_000 && ttl <= 60_000)
        // Expiry is redis-server's own timer: the test waits for that other process's event.
        try await eventually { try await client.send(.get("short")).isNull }
        #expect(try await client.send(.get("long")) == .bulkString("v"))
    }

    @Test("pool exhaustion: a caller waits for a connection, then fails with poolExhausted")
    func poolExhaustion() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.maximumConnections = 2
        configuration.poolWaitTimeout = .seconds(3)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let (held, holding) = AsyncStream.makeStream(of: Void.self)
        let (release, releasing) = AsyncStream.makeStream(of: Void.self)
        let holders = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await client.withConnection { _ in
                            holding.yield()
                            for await _ in release { break }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        var iterator = held.makeAsyncIterator()
        _ = await iterator.next()
        _ = await iterator.next()
        let started = ContinuousClock.now
        await #expect(throws: RedisError.self) {
            do { try await client.send(.ping) } catch let error as RedisError {
                #expect(error.code == .poolExhausted)
                throw error
            }
        }
        #expect(ContinuousClock.now - started >= .milliseconds(2_900))
        #expect(client.connectionCount == 2)
        // A waiter gets a connection as soon as one comes back.
        let waiter = Task { try await client.send(.ping) }
        releasing.yield()
        releasing.yield()
        #expect(try await waiter.value == .simpleString("PONG"))
        try await holders.value
    }

    @Test("a server that dies mid-pipeline fails the pending commands promptly, never hangs them")
    func serverDiesMidPipeline() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        // A command timeout far above the bound below, so that a starved machine cannot pass the
        // test by the timer.
        configuration.commandTimeout = .seconds(60)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        // The pipeline below (BLPOP: a connection of its own) runs on this idle, open connection.
        _ = try await client.withConnection { try await $0.send(.ping) }
        let pending = Task {
            // BLPOP blocks the connection; the GETs queue behind it.
            try await client.pipeline([RedisCommand("BLPOP", "never", "0", keyIndex: 1), .get("a"), .get("b")])
        }
        // BLPOP blocked in the server: the pipeline was written, the GETs wait behind it.
        try await waitUntilBlocked(server)
        let killed = ContinuousClock.now
        server.kill()
        await #expect {
            _ = try await pending.value
        } throws: { error in
            (error as? RedisError)?.code == .connectionClosed
        }
        // Well under the 60 s command timeout: the close failed them, not the timer.
        #expect(ContinuousClock.now - killed < .seconds(40))
    }

    @Test("a pipeline's replies split over many socket reads arrive whole and in order")
    func pipelineAcrossReads() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        defer { Task { await client.shutdown() } }
        // 200 KiB values between small replies: each read ends inside some reply, and the
        // handler keeps the partial bytes until the rest arrives.
        var random = SeededRandom(seed: 11)
        let values = (0..<12).map { index in
            Data(
                (0..<(index.isMultiple(of: 2) ? 200_000 + index : index)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            )
        }
        _ = try await client.pipeline(
            values.enumerated().map { .set("big:\($0.offset)", value: RedisArgument($0.element)) }
        )
        let commands = values.indices.flatMap { [RedisCommand.get("big:\($0)"), .ping] }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let replies = try await client.pipeline(commands)
                    #expect(replies.count == commands.count)
                    for (index, value) in values.enumerated() {
                        #expect(replies[2 * index].bytes.map { Data($0.readableBytesView) } == value, "value \(index)")
                        #expect(replies[2 * index + 1] == .simpleString("PONG"))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Waits until `server` has a client blocked in a command (`INFO clients`), asked over a
    /// connection of its own: the command was written, so its timeout is armed.
    private func waitUntilBlocked(_ server: RedisServerProcess) async throws {
        let observer = RedisClient(configuration: server.configuration)
        defer { Task { await observer.shutdown() } }
        try await eventually {
            let info = try await observer.send(RedisCommand("INFO", "clients")).string ?? ""
            return info.contains("blocked_clients:1")
        }
    }

    // A timer that never fired would leave BLPOP blocked for good: the time limit turns that
    // hang into a failure.
    @Test(
        "a pipeline without a reply in time fails with timeout naming its first unanswered command",
        .timeLimit(.minutes(5))
    )
    func pipelineTimeout() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        // The timeout runs on a clock the test moves: the PING before BLPOP is answered however
        // slowly a loaded machine runs, and BLPOP times out when the clock passes 2 s.
        let clock = SteppedClock()
        configuration.timeoutClock = clock
        configuration.commandTimeout = .seconds(2)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let pipeline = Task {
            try await client.withConnection {
                try await $0.pipeline([.ping, RedisCommand("BLPOP", "never", "0", keyIndex: 1), .ping])
            }
        }
        try await waitUntilBlocked(server)
        clock.advance(by: .seconds(2))
        // Were the timer never to fire, BLPOP would block for good: a hang, not a pass.
        await #expect {
            try await pipeline.value
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .timeout && error.message.contains("BLPOP never")
        }
    }

    // A timer that never fired would leave BLPOP blocked for good: the time limit turns that
    // hang into a failure.
    @Test("a command without a reply in time fails with timeout and closes its connection", .timeLimit(.minutes(5)))
    func commandTimeout() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        // On a clock the test moves: the timeout passes when the test says, never while a
        // loaded machine is merely slow to answer a PING.
        let clock = SteppedClock()
        configuration.timeoutClock = clock
        configuration.commandTimeout = .milliseconds(200)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let blocked = Task { try await client.send(RedisCommand("BLPOP", "never", "0", keyIndex: 1)) }
        try await waitUntilBlocked(server)
        clock.advance(by: .milliseconds(200))
        await #expect {
            try await blocked.value
        } throws: { error in
            (error as? RedisError)?.code == .timeout
        }
        // The client reconnects for the next command.
        #expect(try await client.send(.ping) == .simpleString("PONG"))
    }

    @Test("server restart mid-run: commands fail fast while it is down, then the client reconnects")
    func restart() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(200))
        // The backoff runs on a clock the test moves: while it stands still every command fails
        // at once, and once it has passed the delay the next command reconnects.
        let backoff = SteppedClock()
        configuration.backoffClock = backoff
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        try await client.send(.set("k", value: "before"))
        server.stop()
        var failures = 0
        let downSince = ContinuousClock.now
        for _ in 0..<50 {
            do { try await client.send(.get("k")) } catch let error as RedisError {
                #expect([.connectionClosed, .connectionFailed].contains(error.code))
                failures += 1
            }
        }
        #expect(failures == 50)
        // Far below 50 connect timeouts (10 s each here): an outage must not cost each caller a
        // timeout. (Generous: the suites share two loaded cores.)
        #expect(ContinuousClock.now - downSince < .seconds(30), "an outage must not cost each caller a timeout")
        try await server.start()
        // Past the longest delay and its 20% jitter: the first command reconnects.
        backoff.advance(by: configuration.reconnectBackoff.maximum * 2)
        try await client.send(.set("k", value: "after"))
        #expect(try await client.send(.get("k")) == .bulkString("after"))
    }

    @Test("AUTH through HELLO, RESP2 fallback path, database selection")
    func authenticationAndDatabases() async throws {
        let server = try await RedisServerProcess.start(extraArguments: ["--requirepass", "s3cret"])
        defer { server.remove() }
        let resp3 = try client("redis://:s3cret@127.0.0.1:\(server.port)/3")
        defer { Task { await resp3.shutdown() } }
        try await resp3.send(.set("where", value: "db3"))
        #expect(try await resp3.withConnection { $0.protocolVersion } == 3)
        #expect(try server.cli(["-n", "3", "GET", "where"]).contains("db3"))
        let resp2 = try client("redis://default:s3cret@127.0.0.1:\(server.port)/3?protocol=2")
        defer { Task { await resp2.shutdown() } }
        #expect(try await resp2.withConnection { $0.protocolVersion } == 2)
        #expect(try await resp2.send(.get("where")) == .bulkString("db3"))
        let wrong = try client("redis://:nope@127.0.0.1:\(server.port)")
        defer { Task { await wrong.shutdown() } }
        await #expect {
            try await wrong.send(.ping)
        } throws: { error in
            (error as? RedisError)?.code == .authentication
        }
    }

    /// A client for `url` with the generous test timeouts (the suites run in parallel on a small
    /// machine). The connect timeout covers the handshake (HELLO, AUTH, SELECT): beside the whole
    /// suite at load 13, 30 s ran out once; none of these tests is about it, so it only catches a hang.
    private func client(_ url: String) throws -> RedisClient {
        var configuration = try RedisConfiguration(url: url)
        configuration.connectTimeout = .seconds(300)
        configuration.commandTimeout = .seconds(30)
        return RedisClient(configuration: configuration)
    }

    @Test("URLs: schemes, credentials, database, protocol, and typed errors for bad ones")
    func urls() throws {
        let plain = try RedisConfiguration(url: "redis://cache.internal")
        #expect(plain.host == "cache.internal" && plain.port == 6379 && plain.database == 0 && plain.tls == nil)
        let full = try RedisConfiguration(url: "rediss://app:p%40ss@10.0.0.5:6380/2?protocol=2")
        #expect(full.username == "app" && full.password == "p@ss" && full.port == 6380 && full.database == 2)
        #expect(full.tls != nil && full.protocolVersion == .resp2)
        for bad in ["http://x", "redis://", "redis://h/abc", "redis://h?protocol=4", "nonsense"] {
            #expect(throws: RedisError.self, "\(bad)") { try RedisConfiguration(url: bad) }
        }
    }

    @Test("pub/sub: a subscriber receives what is published, and resubscribes after a restart")
    func pubSub() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(100))
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let subscription = client.subscribe(to: ["news", "other"])
        defer { subscription.cancel() }
        var events = subscription.events.makeAsyncIterator()
        func next(_ matching: (RedisSubscription.Event) -> Bool) async -> RedisSubscription.Event? {
            while let event = await events.next() { if matching(event) { return event } }
            return nil
        }
        _ = await next { if case .subscribed = $0 { true } else { false } }
        try await client.send(.publish("news", message: "hello"))
        let first = await next { if case .message = $0 { true } else { false } }
        if case .message(let channel, let payload)? = first {
            #expect(channel == "news" && String(buffer: payload) == "hello")
        } else {
            Issue.record("no message")
        }
        server.stop()
        _ = await next { if case .disconnected = $0 { true } else { false } }
        try await server.start()
        _ = await next { if case .subscribed = $0 { true } else { false } }
        // The server confirmed both channels again, so a PUBLISH now reaches the subscriber. (From
        // a client of its own: how `client`'s pool comes back after the restart is `restart`'s
        // subject, not this test's.)
        let publisher = RedisClient(configuration: server.configuration)
        defer { Task { await publisher.shutdown() } }
        #expect(try await publisher.send(.publish("other", message: "again")) == .integer(1))
        let second = await next { if case .message = $0 { true } else { false } }
        if case .message(let channel, _)? = second { #expect(channel == "other") }
    }
}
