import NIOCore
import NIOSSL

/// Frames bytes from the socket into ``RESPValue``s for ``RedisChannelHandler``.
struct RESPFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue
    let decoder = RESPDecoder()

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try decoder.decode(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws
        -> DecodingState
    {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Commands written together, and who gets their replies: one promise per command, one
/// promise for all of them (a pipeline), or nobody (`SUBSCRIBE` on a subscriber connection).
struct RedisOutboundRequest {
    enum Completion {
        case each([EventLoopPromise<RESPValue>])
        case all(EventLoopPromise<[RESPValue]>)
        case none
    }

    var commands: [RedisCommand]
    var completion: Completion
}

/// Collects a pipeline's replies on the event loop; one promise completes with all of them.
final class RedisReplyBatch {
    var replies: [RESPValue]
    let promise: EventLoopPromise<[RESPValue]>
    var isFailed = false

    init(count: Int, promise: EventLoopPromise<[RESPValue]>) {
        replies = []
        replies.reserveCapacity(count)
        self.promise = promise
    }
}

/// Matches replies to commands in order (pipelining), routes RESP3 pushes, enforces the
/// command timeout, and fails every pending command when the connection goes away.
///
/// Runs on the channel's event loop only; ``RedisConnection`` talks to it through the channel.
final class RedisChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisOutboundRequest
    typealias OutboundOut = ByteBuffer

    private enum Completion {
        case single(EventLoopPromise<RESPValue>)
        /// Part of a pipeline; the last command of the batch completes its promise.
        case batch(RedisReplyBatch, isLast: Bool)

        func succeed(_ value: RESPValue) {
            switch self {
            case .single(let promise): promise.succeed(value)
            case .batch(let batch, let isLast):
                batch.replies.append(value)
                if isLast, !batch.isFailed { batch.promise.succeed(batch.replies) }
            }
        }

        func fail(_ error: RedisError) {
            switch self {
            case .single(let promise): promise.fail(error)
            case .batch(let batch, _):
                if !batch.isFailed {
                    batch.isFailed = true
                    batch.promise.fail(error)
                }
            }
        }
    }

    private struct Pending {
        var command: RedisCommand
        var completion: Completion
        var deadline: NIODeadline
    }

    private var pending = CircularBuffer<Pending>(initialCapacity: 16)
    private let server: String
    /// During the handshake the connect timeout; afterwards the configured command timeout.
    var commandTimeout: TimeAmount
    private let onPush: @Sendable (RESPValue) -> Void
    private var timeoutCheck: Scheduled<Void>?
    private var timeoutCheckDeadline = NIODeadline.distantFuture
    private var closedError: RedisError?
    private let closeReason: RedisCloseReason
    private var isFlushScheduled = false
    /// After `SUBSCRIBE` on RESP2 every reply is a pub/sub message, not a command's reply.
    var routesEverythingAsPush = false

    init(
        server: String,
        commandTimeout: TimeAmount,
        closeReason: RedisCloseReason,
        onPush: @escaping @Sendable (RESPValue) -> Void
    ) {
        self.server = server
        self.commandTimeout = commandTimeout
        self.closeReason = closeReason
        self.onPush = onPush
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let closedError {
            switch request.completion {
            case .each(let promises): for commandPromise in promises { commandPromise.fail(closedError) }
            case .all(let batchPromise): batchPromise.fail(closedError)
            case .none: break
            }
            promise?.fail(closedError)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: Self.encodedSize(of: request.commands))
        for command in request.commands { RESPEncoder.write(command, into: &buffer) }
        let deadline = NIODeadline.now() + commandTimeout
        switch request.completion {
        case .each(let promises):
            for (command, commandPromise) in zip(request.commands, promises) {
                pending.append(Pending(command: command, completion: .single(commandPromise), deadline: deadline))
            }
        case .all(let batchPromise):
            let batch = RedisReplyBatch(count: request.commands.count, promise: batchPromise)
            for (index, command) in request.commands.enumerated() {
                pending.append(
                    Pending(
                        command: command,
                        completion: .batch(batch, isLast: index == request.commands.count - 1),
                        deadline: deadline
                    )
                )
            }
        case .none:
            break
        }
        // Deadlines grow in the order commands are written, except when the command timeout has
        // just become shorter (the handshake runs under the connect timeout): then the check
        // armed for a handshake command would come too late for this one.
        if !pending.isEmpty, timeoutCheck == nil || deadline < timeoutCheckDeadline {
            timeoutCheck?.cancel()
            scheduleTimeoutCheck(context: context, at: deadline)
        }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }

    /// Commands written by many tasks in the same moment each ask for a flush; one flush after
    /// the event loop has run the writes already queued sends them in one `write(2)`.
    func flush(context: ChannelHandlerContext) {
        if isFlushScheduled { return }
        isFlushScheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            handler.isFlushScheduled = false
            context.flush()
        }
    }

    /// At least the bytes `commands` take on the wire (16 per `*N`/`$N` header and CRLF covers
    /// any length), so a request is encoded into one allocation.
    private static func encodedSize(of commands: [RedisCommand]) -> Int {
        var size = 0
        for command in commands {
            size += 16
            for argument in command.arguments { size += argument.readableBytes + 16 }
        }
        return size
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let value = unwrapInboundIn(data)
        if case .push = value {
            onPush(value)
            return
        }
        if routesEverythingAsPush, pending.isEmpty {
            onPush(value)
            return
        }
        guard let next = pending.popFirst() else {
            // A reply nobody asked for: the stream is out of step; start over.
            fail(RedisError.protocolViolation("a reply arrived with no command waiting for it"), context: context)
            return
        }
        next.completion.succeed(value)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(
            RedisError(
                code: .connectionClosed,
                message: "the connection closed before the reply came; the command may or may not have run",
                server: server
            )
        )
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let redisError =
            (error as? RedisError)
            ?? Self.tlsError(error, server: server)
            ?? RedisError(
                code: .connectionClosed,
                message: "the connection failed; the command may or may not have run",
                server: server,
                cause: error
            )
        fail(redisError, context: context)
    }

    /// A failed TLS handshake as a `.tls` error that says what to check; `nil` for other errors.
    private static func tlsError(_ error: any Error, server: String) -> RedisError? {
        // handshakeFailed: the chain did not verify; NIOSSLExtraError: the names did not match
        // (failedToValidateHostname) or cannot be matched.
        switch error {
        case NIOSSLError.handshakeFailed, is NIOSSLExtraError: break
        default: return nil
        }
        return RedisError(
            code: .tls,
            message: "the TLS handshake failed: the server's certificate is not trusted or does not name this host; "
                + "check the configuration's tls.trustRoots and tlsServerHostname",
            server: server,
            cause: error
        )
    }

    private func fail(_ error: RedisError, context: ChannelHandlerContext) {
        failAll(error)
        context.close(promise: nil)
    }

    private func failAll(_ error: RedisError) {
        if closedError == nil {
            closedError = error
            closeReason.record(error)
        }
        timeoutCheck?.cancel()
        timeoutCheck = nil
        while let next = pending.popFirst() { next.completion.fail(error) }
    }

    /// One timer per connection, re-armed for the oldest pending command's deadline, instead of
    /// one timer per command.
    private func scheduleTimeoutCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timeoutCheckDeadline = deadline
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeoutCheck = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timeoutCheck = nil
            handler.checkTimeouts(context: context)
        }
    }

    private func checkTimeouts(context: ChannelHandlerContext) {
        guard let oldest = pending.first else { return }
        if oldest.deadline <= .now() {
            let timedOut = pending.removeFirst()
            // Close first, so the caller that learns of the timeout finds the connection closed
            // (the pool must not hand it out again).
            fail(
                RedisError(
                    code: .connectionClosed,
                    message: "the connection was closed because an earlier command timed out",
                    server: server
                ),
                context: context
            )
            timedOut.completion.fail(
                RedisError(
                    code: .timeout,
                    message: "no reply to \(timedOut.command) within \(commandTimeout.nanoseconds / 1_000_000) ms; "
                        + "the connection is closed (raise commandTimeout for slow commands)",
                    server: server
                )
            )
        } else {
            scheduleTimeoutCheck(context: context, at: oldest.deadline)
        }
    }
}
