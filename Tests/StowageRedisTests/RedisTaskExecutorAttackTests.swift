import Foundation
import NIOCore
import NIOPosix
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Synchronization
import Testing

/// Callers on ``RedisClient/taskExecutor`` against everything that can go wrong: timeouts that
/// must fire while callers sit on the loop, an exhausted pool, blocking commands, shutdown from
/// the executor itself, servers that lie or go silent, and the event loop group going away.
@Suite(
    "RedisClient.taskExecutor under attack",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisTaskExecutorAttackTests {
    @Test("a command timeout fires for a caller on the executor when the server stops answering")
    func commandTimeoutOnTheExecutor() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        // The timeout runs on a clock the test moves: the PING before the server stops is
        // answered however slowly a loaded machine runs (a 200 ms real timeout cut it once), and
        // the caller's timeout fires when the clock passes it.
        let clock = SteppedClock()
        configuration.timeoutClock = clock
        configuration.commandTimeout = .milliseconds(200)
        // One shared connection, open before the server stops: a second one would wait in its
        // handshake for the connect timeout instead.
        configuration.multiplexedConnections = 1
        let client = RedisClient(configuration: configuration)
        try await client.send(.ping)
        server.suspend()
        defer { server.resume() }
        let caller = Task(executorPreference: client.taskExecutor) {
            try await client.pipeline([.ping, .get("a")])
        }
        // Moved at each poll: the caller's timer is armed once its pipeline is written.
        let outcome = await outcome(within: .seconds(300), polling: { clock.advance(by: .milliseconds(200)) }) {
            try await caller.value
        }
        #expect(redisCode(outcome) == .timeout, "\(String(describing: outcome))")
        server.resume()
        await client.shutdown()
    }

    @Test("callers on the executor that exhaust the pool wait poolWaitTimeout, then fail with poolExhausted")
    func poolExhaustedByExecutorCallers() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.maximumConnections = 2
        configuration.multiplexedConnections = 0
        configuration.poolWaitTimeout = .milliseconds(150)
        let client = RedisClient(configuration: configuration)
        // Two callers hold both connections until the test moves `hold`; the other two must fail
        // after poolWaitTimeout while the connections are still held, however long that takes a
        // loaded machine.
        let hold = SteppedClock()
        // Fixed before anything runs: a holder that reaches its sleep after the advance passes.
        let holdsUntil = hold.now.advanced(by: .seconds(10))
        let (holding, holds) = AsyncStream.makeStream(of: Void.self)
        let failures = FailureCodes()
        let outcomes = Task {
            try await withThrowingTaskGroup(of: RedisError.Code?.self) { group in
                for _ in 0..<4 {
                    group.addTask(executorPreference: client.taskExecutor) {
                        do {
                            try await client.withConnection { connection in
                                try await connection.send(.ping)
                                holds.yield()
                                try await hold.sleep(until: holdsUntil)
                            }
                            return nil
                        } catch let error as RedisError {
                            failures.codes.withLock { $0.append(error.code) }
                            return error.code
                        }
                    }
                }
                return try await group.reduce(into: [RedisError.Code?]()) { $0.append($1) }
            }
        }
        try await eventually(timeout: .seconds(300)) { failures.codes.withLock { $0.count } == 2 }
        // Both holders got their connections and hold them until the advance below (a holder
        // may still be on its way into the sleep: it was told as it went).
        var holders = 0
        for await _ in holding {
            holders += 1
            if holders == 2 { break }
        }
        hold.advance(by: .seconds(10))
        let codes = try await outcomes.value
        #expect(codes.filter { $0 == nil }.count == 2)
        #expect(codes.filter { $0 == .poolExhausted }.count == 2, "\(codes)")
        await client.shutdown()
    }

    @Test(
        "BLPOP on the executor takes a connection of its own; other callers on the executor keep going",
        .timeLimit(.minutes(5))
    )
    func blockingCommandBesideOtherCallers() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        // BLPOP with no timeout: it returns only after the RPUSH below, which comes after the
        // other callers are done. Callers queued behind it would never finish (the time limit
        // catches that hang), so their finishing at all, with BLPOP still waiting, is the proof.
        let popReturned = Atomic<Bool>(false)
        let popped = Task(executorPreference: client.taskExecutor) {
            defer { popReturned.store(true, ordering: .sequentiallyConsistent) }
            return try await client.send(RedisCommand("BLPOP", "attack:list", "0"))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<8 {
                group.addTask(executorPreference: client.taskExecutor) {
                    for round in 0..<50 {
                        let replies = try await client.pipeline([
                            .set("b:\(caller)", value: RedisArgument("\(round)")), .get("b:\(caller)"),
                        ])
                        #expect(replies[1].string == "\(round)")
                    }
                }
            }
            try await group.waitForAll()
        }
        let returnedEarly = popReturned.load(ordering: .sequentiallyConsistent)
        #expect(!returnedEarly, "BLPOP returned before anything was pushed")
        try await client.send(RedisCommand("RPUSH", "attack:list", "x"))
        #expect(
            try await popped.value
                == .array([.bulkString(ByteBuffer(string: "attack:list")), .bulkString(ByteBuffer(string: "x"))])
        )
        await client.shutdown()
    }

    @Test("shutdown() called from a task on the executor returns and fails the callers waiting there")
    func shutdownFromTheExecutor() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.maximumConnections = 3
        configuration.multiplexedConnections = 1
        let client = RedisClient(configuration: configuration)
        try await client.send(.ping)
        server.suspend()
        defer { server.resume() }
        let waiting = (0..<4).map { _ in
            Task(executorPreference: client.taskExecutor) { try await client.pipeline([.ping]) }
        }
        let leased = Task(executorPreference: client.taskExecutor) {
            try await client.withConnection { try await $0.send(.ping) }
        }
        // Everything reached the hung server: the four pipelines on the shared connection (a
        // 14-byte PING each) and the HELLO (22 bytes) of the connection the fifth caller opens.
        try await eventually { try server.unreadBytes().sorted() == [22, 4 * 14] }
        let shutdown = Task(executorPreference: client.taskExecutor) { await client.shutdown() }
        #expect(await outcome(within: .seconds(60)) { await shutdown.value } != nil, "shutdown() hung on its own loop")
        for task in waiting {
            #expect(redisCode(await outcome(within: .seconds(60)) { try await task.value }) != nil)
        }
        server.resume()
        // The leased connection closes when it comes back.
        _ = await outcome(within: .seconds(60)) { try await leased.value }
        let after = Task(executorPreference: client.taskExecutor) { try await client.send(.ping) }
        #expect(redisCode(await outcome(within: .seconds(60)) { try await after.value }) == .shutdown)
    }

    @Test("first use on the executor: handshake over RESP2 with a database, then subscribe and publish")
    func handshakeAndPubSubFromTheExecutor() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = try RedisClient(url: "\(server.url)/3?protocol=2")
        let subscription = await Task(executorPreference: client.taskExecutor) {
            client.subscribe(to: ["attack:news"])
        }.value
        defer { subscription.cancel() }
        // Messages published before the server confirms the subscription are lost, so the
        // publisher waits for the confirmation event, however long a loaded machine takes.
        let confirmed = AsyncStream<Void>.makeStream()
        let received = Task(executorPreference: client.taskExecutor) { () -> String? in
            for await event in subscription.events {
                switch event {
                case .subscribed: confirmed.continuation.yield()
                case .message(_, let payload): return String(buffer: payload)
                case .disconnected: continue
                }
            }
            return nil
        }
        let database = Task(executorPreference: client.taskExecutor) { () -> (RESPValue, RESPValue) in
            try await client.send(.set("attack:db", value: "three"))
            _ = await confirmed.stream.first { _ in true }
            let receivers = try await client.send(.publish("attack:news", message: "hello"))
            let value = try await client.withConnection { connection in
                try await connection.send(RedisCommand("SELECT", "3"))
                return try await connection.send(.get("attack:db"))
            }
            return (receivers, value)
        }
        let (receivers, value) = try await database.value
        #expect(receivers == .integer(1))
        #expect(value.string == "three")
        let message = await outcome(within: .seconds(300)) { await received.value }
        #expect(try message?.get() == "hello")
        await client.shutdown()
    }

    @Test(
        "a server that answers garbage, half a reply or nothing fails callers on the executor",
        arguments: [FakeServer.Reply.garbage, .half, .silent, .unasked]
    )
    func lyingServer(_ reply: FakeServer.Reply) async throws {
        let fake = try await FakeServer.start(reply)
        defer { fake.stop() }
        var configuration = try RedisConfiguration(url: "redis://127.0.0.1:\(fake.port)?protocol=2")
        configuration.commandTimeout = .milliseconds(200)
        configuration.reconnectBackoff = .init(initial: .milliseconds(10), maximum: .milliseconds(20))
        let client = RedisClient(configuration: configuration)
        let callers = (0..<6).map { caller in
            Task(executorPreference: client.taskExecutor) {
                caller.isMultiple(of: 2)
                    ? [try await client.send(.get("k"))] : try await client.pipeline([.ping, .ping])
            }
        }
        for caller in callers {
            let outcome = await outcome(within: .seconds(60)) { try await caller.value }
            #expect(outcome != nil, "a caller on the executor hung")
            if reply != .unasked { #expect(redisCode(outcome) != nil) }
        }
        await client.shutdown()
    }

    @Test("tasks cancelled mid-pipeline leave the connection in step for the callers after them")
    func cancelledMidPipeline() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = server.configuration
        configuration.multiplexedConnections = 1
        let client = RedisClient(configuration: configuration)
        for _ in 0..<20 {
            // Cancelled once every caller has had a reply: all sixteen are in their loops, and
            // most have a pipeline in flight.
            let (answered, answering) = AsyncStream.makeStream(of: Void.self)
            let group = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for caller in 0..<16 {
                        group.addTask(executorPreference: client.taskExecutor) {
                            var isFirst = true
                            while true {
                                let key = "c:\(caller)"
                                let replies = try await client.pipeline([
                                    .set(key, value: RedisArgument("v\(caller)")), .get(key),
                                ])
                                #expect(replies[1].string == "v\(caller)")
                                if isFirst { answering.yield() }
                                isFirst = false
                                try Task.checkCancellation()
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            var callers = 0
            for await _ in answered {
                callers += 1
                if callers == 16 { break }
            }
            group.cancel()
            _ = await group.result
        }
        let check = Task(executorPreference: client.taskExecutor) {
            try await client.pipeline([.set("c:last", value: "last"), .get("c:last"), .ping])
        }
        #expect(
            try await check.value == [
                .simpleString("OK"), .bulkString(ByteBuffer(string: "last")), .simpleString("PONG"),
            ]
        )
        await client.shutdown()
    }

    @Test("5000 tasks on the executor at once all get their replies")
    func thousandsOfCallers() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let client = RedisClient(configuration: server.configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5000 {
                group.addTask(executorPreference: client.taskExecutor) {
                    try await client.send(RedisCommand("INCR", "attack:counter"))
                }
            }
            try await group.waitForAll()
        }
        #expect(try await client.send(.get("attack:counter")).string == "5000")
        await client.shutdown()
    }

    @Test(
        "over rediss://, callers on the executor open TLS connections, pipeline and run WATCH/MULTI/EXEC",
        .enabled(if: TestCertificateAuthority.isAvailable, "openssl is not installed")
    )
    func tlsFromTheExecutor() async throws {
        let authority = try TestCertificateAuthority(
            in: FileManager.default.temporaryDirectory.appending(path: "stowage-tls-\(UUID().uuidString)")
        )
        defer { try? FileManager.default.removeItem(at: authority.directory) }
        let tlsPort = try RedisServerProcess.freePort()
        let server = try await RedisServerProcess.start(
            extraArguments: authority.redisServerArguments(tlsPort: tlsPort)
        )
        defer { server.remove() }
        var configuration = try RedisConfiguration(url: "rediss://localhost:\(tlsPort)")
        configuration.connectTimeout = .seconds(30)
        try configuration.trustCertificateAuthorities(pemFile: authority.certificate.path)
        let client = RedisClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<8 {
                group.addTask(executorPreference: client.taskExecutor) {
                    for round in 0..<20 {
                        let key = "t:\(caller)"
                        let replies = try await client.pipeline([
                            .set(key, value: RedisArgument("\(round)")), .get(key),
                        ])
                        #expect(replies[1].string == "\(round)")
                    }
                    let committed = try await client.withConnection { connection in
                        try await connection.send(RedisCommand("WATCH", RedisArgument("w:\(caller)")))
                        try await connection.send(RedisCommand("MULTI"))
                        try await connection.send(.set("w:\(caller)", value: "x"))
                        return try await connection.send(RedisCommand("EXEC"))
                    }
                    #expect(committed.elements?.count == 1)
                }
            }
            try await group.waitForAll()
        }
        await client.shutdown()
    }

    @Test("two clients on a one-thread group share its loop; each one's callers use the other client too")
    func twoClientsOnOneThread() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = server.configuration
        configuration.eventLoopGroup = group
        let first = RedisClient(configuration: configuration)
        let second = RedisClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for caller in 0..<8 {
                let (own, other) = caller.isMultiple(of: 2) ? (first, second) : (second, first)
                tasks.addTask(executorPreference: own.taskExecutor) {
                    for round in 0..<50 {
                        try await own.send(.set("two:\(caller)", value: RedisArgument("\(round)")))
                        #expect(try await other.send(.get("two:\(caller)")).string == "\(round)")
                    }
                }
            }
            try await tasks.waitForAll()
        }
        await first.shutdown()
        await second.shutdown()
        try await group.shutdownGracefully()
    }

    @Test("callers on the executor whose pipelines are in flight end, and do not hang, when the group shuts down")
    func groupShutsDownUnderCallers() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = server.configuration
        configuration.eventLoopGroup = group
        configuration.multiplexedConnections = 1
        let client = RedisClient(configuration: configuration)
        try await client.send(.ping)
        // Every caller's pipeline is in flight on the one open connection when the group goes:
        // the server is stopped, so none is answered. (A caller that needed a new connection
        // after the group had gone would not complete: NIO cannot connect on a shut-down group,
        // as the guide says; shut the client down first.)
        server.suspend()
        defer { server.resume() }
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let callers = (0..<8).map { caller in
            Task(executorPreference: client.taskExecutor) {
                // Told in the job that then enqueues the pipeline on the loop, without a
                // suspension in between: the loop finishes that job before it starts shutting down.
                starting.yield()
                return try await client.pipeline([.set("g\(caller)", value: "v"), .ping])
            }
        }
        var count = 0
        for await _ in started {
            count += 1
            if count == 8 { break }
        }
        try await group.shutdownGracefully()
        for caller in callers {
            #expect(await outcome(within: .seconds(60)) { try await caller.value } != nil, "a caller hung")
        }
    }
}

extension RedisTaskExecutorAttackTests {
    @Test("a task started on the executor after the event loop group shut down still runs")
    func taskAfterGroupShutdown() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = RedisConfiguration(host: "127.0.0.1", port: 1)
        configuration.eventLoopGroup = group
        let client = RedisClient(configuration: configuration)
        try await group.shutdownGracefully()
        let late = Task(executorPreference: client.taskExecutor) { 42 }
        #expect(try await outcome(within: .seconds(60)) { await late.value }?.get() == 42)
        let later = Task(executorPreference: client.taskExecutor) { 43 }
        #expect(try await outcome(within: .seconds(60)) { await later.value }?.get() == 43)
    }
}

/// The value or error of `operation`, or nil when it has not finished within `limit` (a hung
/// operation is left behind, so a test reports it instead of hanging too). The cut-off only
/// catches hangs: it is ``eventually``'s, the tests' one wait on time.
///
/// `polling`, when given, runs before each look (a test moving its clock while it waits).
func outcome<T: Sendable>(
    within limit: Duration,
    polling: (() -> Void)? = nil,
    _ operation: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    let finished = Outcome<T>()
    Task {
        do { finished.set(.success(try await operation())) } catch { finished.set(.failure(error)) }
    }
    try? await eventually(timeout: limit) {
        polling?()
        return finished.result != nil
    }
    return finished.result
}

func redisCode<T>(_ outcome: Result<T, any Error>?) -> RedisError.Code? {
    guard case .failure(let error) = outcome else { return nil }
    return (error as? RedisError)?.code
}

/// The outcome of an operation, once it has one.
private final class Outcome<T: Sendable>: Sendable {
    private let state = Mutex<Result<T, any Error>?>(nil)
    func set(_ result: Result<T, any Error>) { state.withLock { $0 = result } }
    var result: Result<T, any Error>? { state.withLock { $0 } }
}

/// A RESP server on 127.0.0.1 that answers every read with the same lie.
final class FakeServer: Sendable {
    enum Reply: Sendable, CustomStringConvertible {
        /// Bytes that are no RESP.
        case garbage
        /// The start of a bulk string, and then nothing.
        case half
        /// Nothing at all.
        case silent
        /// Two replies for every read: one nobody asked for.
        case unasked

        var bytes: String {
            switch self {
            case .garbage: "%%%?\r\n"
            case .half: "$10\r\nabc"
            case .silent: ""
            case .unasked: "+OK\r\n+OK\r\n+OK\r\n"
            }
        }

        var description: String {
            switch self {
            case .garbage: "garbage"
            case .half: "half"
            case .silent: "silent"
            case .unasked: "unasked"
            }
        }
    }

    private final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let reply: Reply

        init(reply: Reply) { self.reply = reply }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !reply.bytes.isEmpty else { return }
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: reply.bytes)), promise: nil)
        }
    }

    let channel: any Channel
    var port: Int { channel.localAddress!.port! }

    private init(channel: any Channel) { self.channel = channel }

    static func start(_ reply: Reply) async throws -> FakeServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(reply: reply))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return FakeServer(channel: channel)
    }

    func stop() { channel.close(promise: nil) }
}

/// The codes of the calls that failed, as they fail.
private final class FailureCodes: Sendable {
    let codes = Mutex<[RedisError.Code]>([])
}
