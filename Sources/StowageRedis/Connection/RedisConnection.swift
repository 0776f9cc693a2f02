import Logging
import NIOCore
import NIOPosix
import NIOSSL
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
    /// Why the connection closed, once it has: a command written after that fails with it.
    private let closeReason: RedisCloseReason

    private init(channel: any Channel, server: String, protocolVersion: Int, closeReason: RedisCloseReason) {
        self.channel = channel
        self.server = server
        self.protocolVersion = protocolVersion
        self.closeReason = closeReason
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
        try configuration.validate()
        let server = configuration.address
        let handshakeTimeout = TimeAmount.milliseconds(Int64(configuration.connectTimeout.milliseconds))
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
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RESPFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(
                        RedisChannelHandler(
                            server: server,
                            commandTimeout: handshakeTimeout,
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
        do {
            return try await withHandshakeTimeout(configuration, channel: channel) {
                try await handshake(configuration, channel: channel, closeReason: closeReason)
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
        channel: any Channel,
        _ body: @escaping @Sendable () async throws -> RedisConnection
    ) async throws -> RedisConnection {
        // The timer may already be running on the event loop when the handshake succeeds; the
        // flag keeps it from closing a connection that is about to be used.
        let finished = HandshakeState()
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(configuration.connectTimeout.milliseconds)))
        {
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
        closeReason: RedisCloseReason
    ) async throws -> RedisConnection {
        let server = configuration.address
        let provisional = RedisConnection(
            channel: channel,
            server: server,
            protocolVersion: 2,
            closeReason: closeReason
        )
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
        return RedisConnection(channel: channel, server: server, protocolVersion: version, closeReason: closeReason)
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
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        write(RedisOutboundRequest(commands: [command], completion: .each([promise]))) { promise.fail($0) }
        return try await promise.futureResult.get()
    }

    /// Sends all `commands` in one write and returns their replies in order, error replies as
    /// values (one failing command does not fail the others).
    ///
    /// - Throws: ``RedisError`` `.connectionClosed` or `.timeout` when the replies cannot all come.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        let promise = channel.eventLoop.makePromise(of: [RESPValue].self)
        write(RedisOutboundRequest(commands: commands, completion: .all(promise))) { promise.fail($0) }
        return try await promise.futureResult.get()
    }

    /// Writes `request`; if the write cannot reach the handler (the channel closed and its
    /// pipeline is gone), `onFailure` fails the reply promises, so no caller waits forever.
    /// (Completing a promise twice is a no-op in NIO, so the handler and this may both try.)
    private func write(_ request: RedisOutboundRequest, onFailure: @escaping @Sendable (RedisError) -> Void) {
        let server = server
        let closeReason = closeReason
        channel.writeAndFlush(request).whenFailure { error in
            var unsent =
                error as? RedisError
                ?? closeReason.error
                ?? RedisError(
                    code: .connectionClosed,
                    message: "the connection closed before the command was sent",
                    server: server,
                    cause: error
                )
            unsent.wasNotSent = true
            onFailure(unsent)
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
