import NIOCore
import NIOHTTP1
import StowageLoopClock

/// Bounds how long a client connection may hold the proxy without a request, and closes
/// connections the client asked to close, between NIO's HTTP/1 codec and the server.
///
/// - **Head deadline** (nginx's `client_header_timeout`): from the moment a connection opens,
///   or the first bytes of a later request arrive, the whole head must arrive within
///   `headTimeout`; otherwise the connection closes. A slowloris client that sends a header
///   byte at a time can hold a connection for that long, not forever.
/// - **Idle deadline** (nginx's `keepalive_timeout`): a kept-alive connection with no request in
///   progress closes after `keepAliveTimeout`.
/// - **Send deadline** (nginx's `send_timeout`): while the connection's outbound buffer is full
///   (the channel is not writable), the client must take bytes within `sendTimeout`; a client
///   that stops reading is cut off, so it cannot pin its connection and the response it was
///   sent forever. A slow but steady reader is not: the deadline restarts whenever it takes
///   bytes, however large the buffer it is reading from.
/// - **Persistence** (RFC 9112 §9.3): a request that is not keep-alive (HTTP/1.0 without
///   `Connection: keep-alive`, `Connection: close` in any spelling, or a `CONNECT`, after which
///   NIO's decoder reads no request) gets its response, then the connection closes. An HTTP/1.0 client gets an HTTP/1.0 response, so a body of unknown
///   length is delimited by the close (1.0 has no chunked coding).
///
/// A request body has its own deadline (`RequestBodyReader`); the origin's time is bounded by
/// the upstream timeout. Event-loop bound: every method runs on the channel's event loop.
final class ConnectionTimingHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A request whose response has not ended yet.
    private struct PendingRequest {
        var version: HTTPVersion
        var isKeepAlive: Bool
        /// Whether it is a `HEAD` request, whose response has no body (RFC 9110 §9.3.2).
        var isHead: Bool
        /// Whether its final (non-1xx) head has been written.
        var isAnswered = false
    }

    private let headTimeout: TimeAmount
    private let keepAliveTimeout: TimeAmount
    private let sendTimeout: TimeAmount
    /// What the deadlines are measured and scheduled by (``ProxyConfiguration/timeoutClock``).
    private let clock: LoopClock
    /// Armed while the channel is not writable: the client is not taking bytes.
    private var sendDeadline: Scheduled<Void>?
    /// Requests read whose responses have not ended, oldest first (pipelining).
    private var pending: [PendingRequest] = []
    /// Whether the response being written must close the connection when it ends.
    private var closesAfterResponse = false
    /// Whether the response being written answers a `HEAD` request: its body, if any is
    /// written, is dropped, and its end frames nothing. NIO's encoder is not told the request's
    /// method (``ProxyHTTP1Channel``), so it would frame a length-less head as chunked and end
    /// it with a last chunk.
    private var suppressesBody = false
    /// Its place in the pipeline, for ``encodedResponseWritten()``; set while it is in one.
    private var context: ChannelHandlerContext?
    /// Whether a request part arrived in the current read (so the read was not a partial head).
    private var readDeliveredPart = false
    /// Whether bytes of a next request arrived while a response was still being written.
    private var nextRequestStarted = false
    /// When the head or idle deadline closes the connection; `nil` when none is armed.
    private var deadline: NIODeadline?
    /// The timer that looks at ``deadline``, and when it fires: never after the deadline.
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?

    /// The bytes queued toward the socket, past the encoder.
    private let outboundBytes: OutboundByteCounter

    init(
        headTimeout: TimeAmount,
        keepAliveTimeout: TimeAmount,
        sendTimeout: TimeAmount,
        clock: LoopClock = .system,
        outboundBytes: OutboundByteCounter
    ) {
        self.clock = clock
        self.outboundBytes = outboundBytes
        self.headTimeout = headTimeout
        self.keepAliveTimeout = keepAliveTimeout
        self.sendTimeout = sendTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { arm(headTimeout, context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(headTimeout, context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        stopTimer()
        disarmSend()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        disarmSend()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            disarmSend()
        } else if sendDeadline == nil {
            armSend(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Closes the connection unless the client takes some of the response within
    /// `sendTimeout`, and waits again each time it has (nginx's `send_timeout` is "set only
    /// between two successive write operations, not for the transmission of the whole
    /// response").
    ///
    /// Writability alone does not show progress: a body written as one large buffer (a body
    /// held in memory) keeps the channel unwritable until nearly all of it has left, however
    /// steadily the client reads. So the deadline compares the bytes that have left for the
    /// kernel — those queued past the encoder (``OutboundByteCounter``, heads and chunk frames
    /// included) minus those the channel still buffers — when it was armed and when it fires.
    private func armSend(context: ChannelHandlerContext) {
        let sentWhenArmed = outboundBytes.sent(context: context)
        sendDeadline = clock.scheduleTask(on: context.eventLoop.assumeIsolated(), in: sendTimeout) {
            self.sendDeadline = nil
            if let before = sentWhenArmed, let now = self.outboundBytes.sent(context: context), now > before,
                !context.channel.isWritable
            {
                self.armSend(context: context)
            } else if !context.channel.isWritable {
                context.close(promise: nil)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readDeliveredPart = true
        if case .head(var head) = unwrapInboundIn(data) {
            disarm()
            nextRequestStarted = false
            // After a CONNECT, NIO's request decoder reads no further request on the connection
            // (the rest would be a tunnel's bytes): its answer ends it.
            let isKeepAlive = head.isKeepAlive && head.method != .CONNECT
            pending.append(
                PendingRequest(version: head.version, isKeepAlive: isKeepAlive, isHead: head.method == .HEAD)
            )
            if !isKeepAlive, !head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" })
            {
                // The server after this handler ends the connection after the response only on
                // `Connection: close`; an HTTP/1.0 request means the same without saying it.
                head.headers.add(name: "Connection", value: "close")
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // A read that produced no request part carried part of a head.
        if !readDeliveredPart {
            if pending.isEmpty {
                if deadlineIsIdle { arm(headTimeout, context: context) }
            } else {
                nextRequestStarted = true
            }
        }
        readDeliveredPart = false
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code < 200:
            // An interim response goes on only ahead of its request's final head, and only to
            // HTTP/1.1: RFC 9110 §15.2, a server must not send a 1xx to an HTTP/1.0 client.
            guard let request = pending.first, !request.isAnswered, request.version.minor >= 1 else {
                promise?.succeed(())
                return
            }
        case .head(var head):
            guard let request = pending.first else { break }
            pending[0].isAnswered = true
            closesAfterResponse = !request.isKeepAlive
            suppressesBody = request.isHead
            if request.version.minor == 0 {
                head.version = request.version
                let bodiless =
                    request.isHead || head.status == .noContent || head.status == .notModified
                    || head.headers.contains(name: "content-length")
                // HTTP/1.0 has no chunked coding: a body of unknown length ends with the connection.
                if !bodiless { closesAfterResponse = true }
                head.headers.remove(name: "connection")
                head.headers.add(name: "Connection", value: closesAfterResponse ? "close" : "keep-alive")
            } else if closesAfterResponse, !head.headers.contains(name: "connection") {
                head.headers.add(name: "Connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .body where suppressesBody:
            promise?.succeed(())
            return
        case .end:
            if !pending.isEmpty { pending.removeFirst() }
            var data = data
            if suppressesBody {
                // Nothing to frame: an empty write keeps the promise in order.
                suppressesBody = false
                data = wrapOutboundOut(.body(.byteBuffer(ByteBuffer())))
            }
            if closesAfterResponse {
                context.writeAndFlush(data, promise: promise)
                context.close(promise: nil)
                return
            }
            armAfterResponse(context: context)
            context.write(data, promise: promise)
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }

    /// Records that the oldest request, a keep-alive HTTP/1.1 request, was answered with an
    /// encoded response written past this handler (``MemoryHitHandler``), as a head and end
    /// written through it would.
    func encodedResponseWritten() {
        guard let context, !pending.isEmpty else { return }
        assert(pending[0].isKeepAlive && pending[0].version.minor >= 1)
        pending.removeFirst()
        armAfterResponse(context: context)
    }

    /// With no request left to answer, the idle deadline, or the head deadline when the next
    /// request's first bytes came while this response was being written.
    private func armAfterResponse(context: ChannelHandlerContext) {
        guard pending.isEmpty else { return }
        arm(nextRequestStarted ? headTimeout : keepAliveTimeout, context: context, isIdle: !nextRequestStarted)
        nextRequestStarted = false
    }

    /// Whether the armed deadline is the idle one (or none is armed).
    private var deadlineIsIdle = true

    /// Moves the head or idle deadline to `timeout` from now.
    ///
    /// Every request disarms it and every response arms it again, so it is a time to compare,
    /// not a timer per request: one timer stays scheduled, and when it fires at a deadline that
    /// has since moved later it waits again (a timer scheduled and cancelled per request was a
    /// tenth of the time of a hit answered on the event loop). A deadline moved earlier than
    /// the timer gets a new timer.
    private func arm(_ timeout: TimeAmount, context: ChannelHandlerContext, isIdle: Bool = false) {
        deadlineIsIdle = isIdle
        let at = clock.now() + timeout
        deadline = at
        if let timer {
            if timer.at <= at { return }
            timer.task.cancel()
        }
        startTimer(at: at, context: context)
    }

    private func startTimer(at: NIODeadline, context: ChannelHandlerContext) {
        let task = clock.scheduleTask(on: context.eventLoop.assumeIsolated(), deadline: at) {
            self.timer = nil
            guard let deadline = self.deadline else { return }
            if deadline > self.clock.now() {
                self.startTimer(at: deadline, context: context)
            } else {
                context.close(promise: nil)
            }
        }
        timer = (task, at)
    }

    private func stopTimer() {
        timer?.task.cancel()
        timer = nil
        disarm()
    }

    private func disarmSend() {
        sendDeadline?.cancel()
        sendDeadline = nil
    }

    private func disarm() {
        deadline = nil
        deadlineIsIdle = true
    }
}
