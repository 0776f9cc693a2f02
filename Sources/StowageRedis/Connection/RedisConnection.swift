import Logging
import NIOCore
import NIOPosix
import NIOSSL
import StowageLoopClock
import Synchronization

/// One connection to one Redis server: commands are pipelined (sent without waiting for
/// earlier replies) and replies matched in order.
///
/// Most code uses ``RedisClient``, which pools connections; take one with
/// ``RedisClient/withConnection(_:)`` for `MULTI`/`EXEC` or a ``pipeline(_:)``.
///
/// When the server goes away, every command still waiting fails at once with
/// `.connectionClosed`; a command that gets no reply within the command timeout fails with
/// `.timeout` and closes the connection.
public final class RedisConnection: Sendable {
    /// What `HELLO` negotiated.
    public let protocolVersion: Int
    /// `host:port`.
    public let server: String
    let channel: any Channel
    /// Encodes commands on the caller's thread (the default, malloc-backed allocator, as the
    /// channel's own).
    private static let allocator = ByteBufferAllocator()
    /// The channel's handler, which commands are handed to directly on the event loop.
    private let handler: NIOLoopBound<RedisChannelHandler>

    private init(
        channel: any Channel,
        handler: NIOLoopBound<RedisChannelHandler>,
        server: String,
        protocolVersion: Int
    ) {
        self.channel = channel
        self.handler = handler
        self.server = server
        self.protocolVersion = protocolVersion
    }

    /// Connects, negotiates the protocol, authenticates and selects the database.
    ///
    /// - Parameters:
    ///   - configuration: The server, credentials, protocol, timeouts and TLS settings.
    ///   - onPush: Receives RESP3 push messages (and, on a subscriber connection, every reply).
    ///     It runs on the connection's event loop; keep it short.
    /// - Throws: ``RedisError``: `.connectionFailed`, `.timeout`, `.tls`, `.authentication`, `.server`.
    public static func connect(
        _ configuration: RedisConfiguration,
        onPush: @escaping @Sendable (RESPValue) -> Void = { _ in }
    ) async throws -> RedisConnection {
        try await connect(configuration, onPush: onPush, recordingIn: nil)
    }

    /// ``connect(_:onPush:)``, with the channel recorded in `opening` until the handshake ends
    /// (a pool's shutdown closes it there).
    static func connect(
        _ configuration: RedisConfiguration,
        onPush: @escaping @Sendable (RESPValue) -> Void = { _ in },
        recordingIn opening: RedisOpeningChannels?
    ) async throws -> RedisConnection {
        try configuration.validate()
        let server = configuration.address
        let handshakeTimeout = TimeAmount.milliseconds(Int64(configuration.connectTimeout.milliseconds))
        let clock = LoopClock(configuration.timeoutClock)
        let sslContext: NIOSSLContext?
        do {
            sslContext = try configuration.tls.map { try NIOSSLContext(configuration: $0) }
        } catch {
            throw RedisError(code: .tls, message: "the TLS configuration is not usable", server: server, cause: error)
        }
        let tlsHostname = configuration.tlsServerHostname ?? configuration.host
        let closeReason = RedisCloseReason()
        let bootstrap = ClientBootstrap(group: configuration.eventLoopGroup)
            .connectTimeout(.milliseconds(Int64(configuration.connectTimeout.milliseconds)))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let isIPAddress = (try? SocketAddress(ipAddress: tlsHostname, port: 0)) != nil
                        let tlsHandler = try NIOSSLClientHandler(
                            context: sslContext,
                            serverHostname: isIPAddress ? nil : tlsHostname
                        )
                        try channel.pipeline.syncOperations.addHandler(tlsHandler)
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        RedisChannelHandler(
                            server: server,
                            commandTimeout: handshakeTimeout,
                            clock: clock,
                            closeReason: closeReason,
                            onPush: onPush
                        )
                    )
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: configuration.host, port: configuration.port).get()
        } catch {
            throw RedisError(
                code: .connectionFailed,
                message: "cannot connect to Redis; check that the server runs and the address is right",
                server: server,
                cause: error
            )
        }
        if let opening, !opening.add(channel) {
            channel.close(promise: nil)
            throw RedisError(code: .shutdown, message: "the Redis client was shut down", server: server)
        }
        defer { opening?.remove(channel) }
        do {
            let handler = try await channel.eventLoop.submit {
                NIOLoopBound(
                    try channel.pipeline.syncOperations.handler(type: RedisChannelHandler.self),
                    eventLoop: channel.eventLoop
                )
            }.get()
            return try await withHandshakeTimeout(configuration, clock: clock, channel: channel) {
                try await handshake(configuration, channel: channel, handler: handler)
            }
        } catch {
            channel.close(promise: nil)
            // A failed TLS handshake closes the channel, and HELLO may then fail merely as
            // "closed"; the TLS error says what to fix.
            if let reason = closeReason.error, reason.code == .tls { throw reason }
            throw error
        }
    }

    private static func withHandshakeTimeout(
        _ configuration: RedisConfiguration,
        clock: LoopClock,
        channel: any Channel,
        _ body: @escaping @Sendable () async throws -> RedisConnection
    ) async throws -> RedisConnection {
        // The timer may already be running on the event loop when the handshake succeeds; the
        // flag keeps it from closing a connection that is about to be used.
        let finished = HandshakeState()
        let timer = clock.scheduleTask(
            on: channel.eventLoop,
            in: .milliseconds(Int64(configuration.connectTimeout.milliseconds))
        ) {
            guard !finished.isDone.load(ordering: .acquiring) else { return }
            channel.pipeline.fireErrorCaught(
                RedisError(
                    code: .timeout,
                    message: "the server accepted the connection but did not finish the handshake in time",
                    server: configuration.address
                )
            )
        }
        defer { timer.cancel() }
        let connection = try await body()
        finished.isDone.store(true, ordering: .releasing)
        return connection
    }

    private static func handshake(
        _ configuration: RedisConfiguration,
        channel: any Channel,
        handler: NIOLoopBound<RedisChannelHandler>
    ) async throws -> RedisConnection {
        let server = configuration.address
        let provisional = RedisConnection(channel: channel, handler: handler, server: server, protocolVersion: 2)
        var version = 2
        if configuration.protocolVersion != .resp2 {
            var hello: [RedisArgument] = ["3"]
            if let password = configuration.password {
                hello += ["AUTH", RedisArgument(configuration.username ?? "default"), RedisArgument(password)]
            }
            if let name = configuration.clientName { hello += ["SETNAME", RedisArgument(name)] }
            let reply = try await provisional.sendRaw(RedisCommand("HELLO", hello))
            if let message = reply.errorMessage {
                let word = message.prefix { $0 != " " }
                let isUnknown = word == "NOPROTO" || message.lowercased().contains("unknown command")
                if word == "WRONGPASS" || word == "NOAUTH" || word == "NOPERM" {
                    throw RedisError(
                        code: .authentication,
                        message: "the server refused the credentials; check the URL's user and password",
                        server: server,
                        serverMessage: message
                    )
                }
                guard isUnknown, configuration.protocolVersion == .automatic else {
                    throw RedisError.serverError(message, command: RedisCommand("HELLO"), server: server)
                }
            } else {
                version = 3
            }
        }
        if version == 2 {
            if let password = configuration.password {
                var auth: [RedisArgument] = [RedisArgument(password)]
                if let username = configuration.username { auth.insert(RedisArgument(username), at: 0) }
                let reply = try await provisional.sendRaw(RedisCommand("AUTH", auth))
                if let message = reply.errorMessage {
                    throw RedisError(
                        code: .authentication,
                        message: "the server refused the credentials; check the URL's user and password",
                        server: server,
                        serverMessage: message
                    )
                }
            }
            if let name = configuration.clientName {
                _ = try await provisional.send(RedisCommand("CLIENT", "SETNAME", RedisArgument(name)))
            }
        }
        if configuration.database != 0 {
            _ = try await provisional.send(RedisCommand("SELECT", RedisArgument(configuration.database)))
        }
        if configuration.sendsReadOnly {
            _ = try await provisional.send(RedisCommand("READONLY"))
        }
        let commandTimeout = TimeAmount.milliseconds(Int64(configuration.commandTimeout.milliseconds))
        do {
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.handler(type: RedisChannelHandler.self).commandTimeout =
                    commandTimeout
            }.get()
        } catch {
            throw RedisError(
                code: .timeout,
                message: "the connection closed at the end of the handshake (the connect timeout passed)",
                server: server,
                cause: error
            )
        }
        return RedisConnection(channel: channel, handler: handler, server: server, protocolVersion: version)
    }

    /// Whether the connection is still open.
    public var isActive: Bool { channel.isActive }

    /// Sends `command` and returns its reply.
    ///
    /// - Throws: ``RedisError``: `.server` for an error reply (its text in `serverMessage`),
    ///   `.connectionClosed`, `.timeout`.
    @discardableResult
    public func send(_ command: RedisCommand) async throws -> RESPValue {
        let reply = try await sendRaw(command)
        if let message = reply.errorMessage { throw RedisError.serverError(message, command: command, server: server) }
        return reply
    }

    /// Sends `command` and returns its reply, error replies included as values.
    public func sendRaw(_ command: RedisCommand) async throws -> RESPValue {
        try await withUnsafeThrowingContinuation { continuation in
            enqueue(
                RedisOutboundRequest(
                    commands: [command],
                    completion: .each([continuation]),
                    encoded: RedisOutboundRequest.encode([command], allocator: Self.allocator)
                )
            )
        }
    }

    /// Sends all `commands` in one write and returns their replies in order, error replies as
    /// values (one failing command does not fail the others).
    ///
    /// - Throws: ``RedisError`` `.connectionClosed` or `.timeout` when the replies cannot all come.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        // Encoded here, on the caller's thread, into one buffer: the event loop, which all the
        // connection's callers share, only writes it. One continuation for the whole pipeline,
        // resumed with all its replies.
        let encoded = RedisOutboundRequest.encode(commands, allocator: Self.allocator)
        return try await withUnsafeThrowingContinuation { continuation in
            enqueue(RedisOutboundRequest(commands: commands, completion: .all(continuation), encoded: encoded))
        }
    }

    /// Hands `request` to the channel's handler on the event loop. Once the connection has
    /// closed, the handler fails the request at once marked as not sent
    /// (``RedisError/wasNotSent``), so no caller waits forever and a caller may retry elsewhere.
    private func enqueue(_ request: RedisOutboundRequest) {
        let eventLoop = channel.eventLoop
        if eventLoop.inEventLoop {
            handler.value.enqueue(request)
        } else {
            eventLoop.execute { [handler] in handler.value.enqueue(request) }
        }
    }

    /// Writes `command` without waiting for (or matching) a reply: for `SUBSCRIBE` on a
    /// connection whose replies all arrive as pushes.
    func sendWithoutReply(_ command: RedisCommand) async throws {
        try await channel.writeAndFlush(RedisOutboundRequest(commands: [command], completion: .none)).get()
    }

    /// Makes every later reply go to the push handler (a RESP2 subscriber connection).
    func routeEverythingAsPush() async throws {
        try await channel.eventLoop.submit { [channel] in
            let handler = try channel.pipeline.syncOperations.handler(type: RedisChannelHandler.self)
            handler.routesEverythingAsPush = true
        }.get()
    }

    /// Resolves when the connection has closed.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Closes the connection; commands still waiting fail with `.connectionClosed`.
    public func close() async {
        try? await channel.close()
    }
}

private final class HandshakeState: Sendable {
    let isDone = Atomic<Bool>(false)
}

/// The first error that closed a connection, recorded by ``RedisChannelHandler`` on the event
/// loop and read by whoever next tries to write.
final class RedisCloseReason: Sendable {
    private let first = Mutex<RedisError?>(nil)

    var error: RedisError? { first.withLock { $0 } }

    func record(_ error: RedisError) {
        first.withLock { if $0 == nil { $0 = error } }
    }
}
