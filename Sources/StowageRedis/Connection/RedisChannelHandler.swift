import NIOCore
import NIOSSL
import StowageLoopClock

/// Commands written together, and who gets their replies: one continuation per command, one
/// continuation for all of them (a pipeline), or nobody (`SUBSCRIBE` on a subscriber connection).
struct RedisOutboundRequest: Sendable {
    enum Completion: Sendable {
        case each([UnsafeContinuation<RESPValue, any Error>])
        case all(UnsafeContinuation<[RESPValue], any Error>)
        case none
    }

    var commands: [RedisCommand]
    var completion: Completion
    /// The commands in RESP, when the sender encoded them already (on its own thread, so the
    /// event loop only writes them); otherwise the handler encodes them.
    var encoded: ByteBuffer?

    init(commands: [RedisCommand], completion: Completion, encoded: ByteBuffer? = nil) {
        self.commands = commands
        self.completion = completion
        self.encoded = encoded
    }

    /// `commands` in RESP, in one buffer sized for them up front.
    static func encode(_ commands: [RedisCommand], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: encodedSize(of: commands))
        for command in commands { RESPEncoder.write(command, into: &buffer) }
        return buffer
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

    /// Resumes every waiter with `error`; for a request that never reached the pending queue.
    func fail(_ error: RedisError) {
        switch completion {
        case .each(let continuations): for continuation in continuations { continuation.resume(throwing: error) }
        case .all(let continuation): continuation.resume(throwing: error)
        case .none: break
        }
    }
}

/// Frames replies, matches them to commands in order (pipelining), routes RESP3 pushes,
/// enforces the command timeout, and fails every pending command when the connection goes away.
///
/// Runs on the channel's event loop only. ``RedisConnection`` hands it requests with
/// ``enqueue(_:)`` on the event loop, not through `Channel.write`: that skips wrapping each
/// request in `NIOAny` and the pipeline's generic write path; `SUBSCRIBE` without a reply still
/// goes through the channel (``write(context:data:promise:)``). Replies are decoded here from
/// the bytes the socket read, without a separate `ByteToMessageHandler` stage, so a reply is not
/// wrapped in `NIOAny` and passed down the pipeline once more.
final class RedisChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RedisOutboundRequest
    typealias OutboundOut = ByteBuffer

    /// Who gets the replies of one request; replies arrive in the order requests were written.
    private enum Completion {
        case single(UnsafeContinuation<RESPValue, any Error>)
        /// A pipeline of `count` commands; its replies collect in ``RedisChannelHandler/batchReplies``
        /// while it is the oldest pending request.
        case batch(UnsafeContinuation<[RESPValue], any Error>, count: Int)
    }

    /// One request waiting for replies. Each entry is resumed exactly once: by its last reply,
    /// or by the failure that removes it from ``RedisChannelHandler/pending``.
    private struct Pending {
        var commands: [RedisCommand]
        /// The first of `commands` that this entry stands for (a `.single` entry of an `.each` request).
        var firstCommand: Int
        var completion: Completion
        var deadline: NIODeadline
        /// Identifies the request whose write failed, to fail just that one (and those after it).
        var writeID: UInt64
    }

    private var pending = CircularBuffer<Pending>(initialCapacity: 16)
    /// The replies so far of the oldest pending request when it is a pipeline.
    private var batchReplies: [RESPValue] = []
    private let decoder = RESPDecoder()
    /// Bytes of a reply that has not fully arrived yet. Kept as a slice of just those bytes:
    /// appending to a buffer that shares its storage copies it, and a whole receive buffer's
    /// storage (already-read bytes included) would be copied otherwise.
    private var partial: ByteBuffer?
    private var context: ChannelHandlerContext?
    private var nextWriteID: UInt64 = 0
    private let server: String
    /// During the handshake the connect timeout; afterwards the configured command timeout.
    var commandTimeout: TimeAmount
    /// What the command timeout is measured and scheduled by (``RedisConfiguration/timeoutClock``).
    private let clock: LoopClock
    private let onPush: @Sendable (RESPValue) -> Void
    private var timeoutCheck: Scheduled<Void>?
    private var timeoutCheckDeadline = NIODeadline.distantFuture
    private var closedError: RedisError?
    private let closeReason: RedisCloseReason
    private var isFlushScheduled = false
    /// The newest request from ``enqueue(_:)``, written at the flush (see ``writeHeld(context:)``).
    private var heldWrite: ByteBuffer?
    /// The first request written since the last flush.
    private var firstUnflushedWriteID: UInt64?
    /// After `SUBSCRIBE` on RESP2 every reply is a pub/sub message, not a command's reply.
    var routesEverythingAsPush = false

    init(
        server: String,
        commandTimeout: TimeAmount,
        clock: LoopClock,
        closeReason: RedisCloseReason,
        onPush: @escaping @Sendable (RESPValue) -> Void
    ) {
        self.server = server
        self.commandTimeout = commandTimeout
        self.clock = clock
        self.closeReason = closeReason
        self.onPush = onPush
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        failAll(closedError ?? Self.closedBeforeReply(server: server))
    }

    /// Writes `request` and asks for a flush; on the event loop. Once the connection has closed
    /// (or the handler left the pipeline) the request fails at once, marked as not sent, so a
    /// caller may retry it on another connection.
    func enqueue(_ request: RedisOutboundRequest) {
        guard let context, closedError == nil else {
            var unsent =
                closeReason.error
                ?? closedError
                ?? RedisError(
                    code: .connectionClosed,
                    message: "the connection closed before the command was sent",
                    server: server
                )
            unsent.wasNotSent = true
            request.fail(unsent)
            return
        }
        let writeID = nextWriteID
        nextWriteID &+= 1
        let bytes = encode(request, writeID: writeID, context: context)
        // The previous request goes to the channel now; this one waits for the flush, which
        // writes it with the one promise that reports a failed write for all of them.
        if let held = heldWrite { context.write(wrapOutboundOut(held), promise: nil) }
        heldWrite = bytes
        if firstUnflushedWriteID == nil { firstUnflushedWriteID = writeID }
        flush(context: context)
    }

    /// Writes the held request with a promise: writes to a socket fail in order, so when any
    /// write since the last flush fails, this one fails too, and every request from the first
    /// unflushed one on is failed as not sent. One promise per flush instead of one per request.
    private func writeHeld(context: ChannelHandlerContext) {
        guard let held = heldWrite, let firstWriteID = firstUnflushedWriteID else { return }
        heldWrite = nil
        firstUnflushedWriteID = nil
        let writePromise = context.eventLoop.makePromise(of: Void.self)
        writePromise.futureResult.assumeIsolated().whenFailure { [self] error in
            failUnsent(from: firstWriteID, error: error)
        }
        context.write(wrapOutboundOut(held), promise: writePromise)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let closedError {
            request.fail(closedError)
            promise?.fail(closedError)
            return
        }
        let writeID = nextWriteID
        nextWriteID &+= 1
        // Requests handed over by enqueue go first: the server must see them in order.
        writeHeld(context: context)
        context.write(wrapOutboundOut(encode(request, writeID: writeID, context: context)), promise: promise)
    }

    /// The request's bytes; its commands join the pending queue (and the timeout check).
    private func encode(
        _ request: RedisOutboundRequest,
        writeID: UInt64,
        context: ChannelHandlerContext
    ) -> ByteBuffer {
        let buffer =
            request.encoded ?? RedisOutboundRequest.encode(request.commands, allocator: context.channel.allocator)
        let deadline = clock.now() + commandTimeout
        switch request.completion {
        case .each(let continuations):
            for (index, continuation) in continuations.enumerated() {
                pending.append(
                    Pending(
                        commands: request.commands,
                        firstCommand: index,
                        completion: .single(continuation),
                        deadline: deadline,
                        writeID: writeID
                    )
                )
            }
        case .all(let continuation):
            pending.append(
                Pending(
                    commands: request.commands,
                    firstCommand: 0,
                    completion: .batch(continuation, count: request.commands.count),
                    deadline: deadline,
                    writeID: writeID
                )
            )
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
        return buffer
    }

    /// A write failed (the socket or TLS gave up before the bytes left): the request it carried
    /// and every later one were not sent; they fail marked so, and the connection closes.
    private func failUnsent(from writeID: UInt64, error: any Error) {
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
        // Writes complete in order: the failed one and every later one were not sent.
        guard let first = pending.first, let last = pending.last, last.writeID >= writeID else { return }
        if first.writeID >= writeID { batchReplies.removeAll() }
        var unsentEntries: [Pending] = []
        while let newest = pending.last, newest.writeID >= writeID { unsentEntries.append(pending.removeLast()) }
        for entry in unsentEntries.reversed() { Self.fail(entry, with: unsent) }
        context?.close(promise: nil)
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
            handler.writeHeld(context: context)
            context.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        do {
            if var carried = partial {
                partial = nil
                guard try finishCarried(&carried, from: &bytes, context: context) else {
                    if closedError == nil { partial = carried.slice() }
                    return
                }
            }
            while closedError == nil, let value = try decoder.decode(&bytes) {
                route(value, context: context)
            }
        } catch {
            fail(
                error as? RedisError ?? RedisError.protocolViolation("the reply could not be read"),
                context: context
            )
            return
        }
        if bytes.readableBytes > 0, closedError == nil { partial = bytes.slice() }
    }

    /// Completes the reply that began in an earlier read (`carried`) with the first bytes of
    /// `bytes`, copying only about as many as it needs rather than the whole read: chunks that
    /// double (and at least match what is carried, so a large reply is parsed a bounded number
    /// of times), until the carried bytes are all consumed. The bytes copied past that point are
    /// still in `bytes`, which is rewound to them and decoded in place, its replies slices of the
    /// socket's buffer. Returns false when `bytes` ran out first (`carried` then holds them all).
    private func finishCarried(
        _ carried: inout ByteBuffer,
        from bytes: inout ByteBuffer,
        context: ChannelHandlerContext
    ) throws -> Bool {
        // Once no more than the appended bytes are left unread, every carried byte from the
        // earlier read is consumed and the rest are in `bytes` too. (Counted, not by index:
        // appending to a shared buffer copies it and moves its indices.)
        var appended = 0
        var chunk = max(512, carried.readableBytes)
        while carried.readableBytes > appended {
            guard bytes.readableBytes > 0 else { return false }
            var slice = bytes.readSlice(length: min(chunk, bytes.readableBytes))!
            appended += slice.readableBytes
            carried.writeBuffer(&slice)
            chunk = max(chunk * 2, carried.readableBytes)
            while closedError == nil, carried.readableBytes > appended, let value = try decoder.decode(&carried) {
                route(value, context: context)
            }
            if closedError != nil { return false }
        }
        bytes.moveReaderIndex(to: bytes.readerIndex - carried.readableBytes)
        return true
    }

    /// Hands `value` to whoever waits for it; `consuming`, so a reply moves into its pipeline's
    /// array without a copy.
    private func route(_ value: consuming RESPValue, context: ChannelHandlerContext) {
        if case .push = value {
            onPush(value)
            return
        }
        if routesEverythingAsPush, pending.isEmpty {
            onPush(value)
            return
        }
        guard !pending.isEmpty else {
            // A reply nobody asked for: the stream is out of step; start over.
            fail(RedisError.protocolViolation("a reply arrived with no command waiting for it"), context: context)
            return
        }
        switch pending[pending.startIndex].completion {
        case .single(let continuation):
            pending.removeFirst()
            continuation.resume(returning: value)
        case .batch(let continuation, let count):
            if batchReplies.isEmpty { batchReplies.reserveCapacity(count) }
            batchReplies.append(value)
            if batchReplies.count == count {
                pending.removeFirst()
                var replies: [RESPValue] = []
                swap(&replies, &batchReplies)
                continuation.resume(returning: replies)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(Self.closedBeforeReply(server: server))
        context.fireChannelInactive()
    }

    private static func closedBeforeReply(server: String) -> RedisError {
        RedisError(
            code: .connectionClosed,
            message: "the connection closed before the reply came; the command may or may not have run",
            server: server
        )
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
        partial = nil
        heldWrite = nil
        firstUnflushedWriteID = nil
        batchReplies.removeAll()
        while let next = pending.popFirst() { Self.fail(next, with: error) }
    }

    private static func fail(_ entry: Pending, with error: RedisError) {
        switch entry.completion {
        case .single(let continuation): continuation.resume(throwing: error)
        case .batch(let continuation, _): continuation.resume(throwing: error)
        }
    }

    /// One timer per connection, re-armed for the oldest pending command's deadline, instead of
    /// one timer per command.
    private func scheduleTimeoutCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timeoutCheckDeadline = deadline
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeoutCheck = clock.scheduleTask(on: context.eventLoop, deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timeoutCheck = nil
            handler.checkTimeouts(context: context)
        }
    }

    private func checkTimeouts(context: ChannelHandlerContext) {
        guard let oldest = pending.first else { return }
        if oldest.deadline <= clock.now() {
            // The command the server has not answered: in a pipeline, the first without a reply.
            let unanswered =
                if case .batch = oldest.completion { batchReplies.count } else { oldest.firstCommand }
            let command = oldest.commands[min(unanswered, oldest.commands.count - 1)]
            let timedOut = pending.removeFirst()
            batchReplies.removeAll()
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
            Self.fail(
                timedOut,
                with: RedisError(
                    code: .timeout,
                    message: "no reply to \(command) within \(commandTimeout.nanoseconds / 1_000_000) ms; "
                        + "the connection is closed (raise commandTimeout for slow commands)",
                    server: server
                )
            )
        } else {
            scheduleTimeoutCheck(context: context, at: oldest.deadline)
        }
    }
}
