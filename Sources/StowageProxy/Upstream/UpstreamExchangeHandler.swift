import NIOCore
import NIOHTTP1
import StowageCore
import StowageLoopClock

/// Drives one HTTP/1.1 exchange at a time on an upstream connection, after NIO's HTTP/1 codec.
///
/// - Interim responses (1xx, RFC 9110 §15.2) go to the exchange's `interim` callback and never
///   become the response; past ``UpstreamClient/Configuration/maximumInterimResponses`` the
///   exchange fails. A 101 fails it: the proxy asks for no upgrade, and a cache cannot carry one.
/// - A body whose `Content-Length` is at most ``UpstreamClient/Configuration/wholeBodyLimit`` is
///   read whole here, and the response handed over with it at its end (nginx's
///   `proxy_buffering`): no hop per part, and the proxy answers with one write.
/// - Any other body streams to an ``UpstreamResponseBody``: while its consumer has enough, the
///   handler holds the channel's reads back, so the socket is read as fast as the body is taken.
/// - Deadlines: the response head must come before the request's deadline; once the request is
///   sent, the upstream may not stay silent longer than the read timeout while the proxy waits
///   for it (also while a body is read whole; not while reads are held back, nor before the
///   body's consumer starts:
///   ``BodyConsumption``); an idle connection closes after the idle timeout. One timer serves all three:
///   it fires at the earliest and looks again (a timer per body part would cost more than it saves).
/// - After a response that ends where its framing says (RFC 9112 §6.3) on a persistent
///   connection, with nothing after it (``UpstreamResponseDecoder``), the exchange ends
///   reusable; every other end closes the connection.
///
/// Event-loop bound: every method runs on the channel's event loop.
final class UpstreamExchangeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// One request and what its owner waits for.
    struct Exchange {
        var promise: EventLoopPromise<UpstreamResponse>
        /// Receives each interim response, on the event loop, before the response.
        var interim: @Sendable (HTTPResponseHead) -> Void
        /// Called once when the exchange is over: `true` when the connection can carry another.
        var ended: @Sendable (_ reusable: Bool) -> Void
        var deadline: NIODeadline
        var isHead: Bool
    }

    private enum State {
        case idle(since: NIODeadline)
        case awaitingHead(Exchange, interims: Int, receivedPart: Bool)
        /// The head has come with a short body (``UpstreamClient/Configuration/wholeBodyLimit``),
        /// read whole before the exchange's promise is answered; `body` holds what has come.
        case readingWholeBody(Exchange, head: HTTPResponseHead, body: ByteBuffer?, isReusable: Bool)
        case streamingBody(Exchange, UpstreamResponseBody.Source, isReusable: Bool, consumption: BodyConsumption)
        case closed
    }

    private var state: State
    private let configuration: UpstreamClient.Configuration
    private let origin: String
    /// Where the response ends, shared with the connection's ``UpstreamResponseDecoder``.
    private let framing: UpstreamResponseFraming
    private var context: ChannelHandlerContext?
    /// The exchange in progress (or the last one), so late signals about an earlier one are ignored.
    private var exchangeID: UInt64 = 0
    /// Whether the request's last part has been written: the read timeout runs from then.
    private var requestComplete = false
    /// When the upstream last sent something (or the request was sent).
    private var lastRead: NIODeadline
    /// Whether the body's consumer has enough: reads are held back until it asks for more.
    private var readsPaused = false
    /// A read the channel asked for while reads were held back.
    private var heldRead = false
    /// The timer that checks the deadlines, and when it fires.
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?

    init(configuration: UpstreamClient.Configuration, origin: String, framing: UpstreamResponseFraming) {
        self.configuration = configuration
        self.origin = origin
        self.framing = framing
        state = .idle(since: configuration.clock.now())
        lastRead = configuration.clock.now()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        scheduleCheck()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.task.cancel()
        timer = nil
        self.context = nil
    }

    // MARK: - Exchanges

    /// Sends `head` (and, without a body, the request's end) and answers `exchange.promise` with
    /// the response head, or fails it. A body follows through the channel.
    func start(_ head: HTTPRequestHead, hasBody: Bool, exchange: Exchange) {
        guard case .idle = state, let context, context.channel.isActive else {
            // Closed while idle in the pool: nothing was sent, so the request may go again.
            exchange.promise.fail(StowageError.upstream(.closedBeforeResponse, origin: origin))
            exchange.ended(false)
            return
        }
        exchangeID &+= 1
        state = .awaitingHead(exchange, interims: 0, receivedPart: false)
        framing.reset(awaitsHead: true)
        requestComplete = false
        readsPaused = false
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !hasBody {
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
            requestSent()
        }
        context.flush()
        scheduleCheck()
    }

    private func requestSent() {
        requestComplete = true
        lastRead = configuration.clock.now()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            requestSent()
            scheduleCheck()
        }
        context.write(data, promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        lastRead = configuration.clock.now()
        if case .body(let buffer) = part, let remaining = framing.remainingBody {
            framing.remainingBody = remaining - buffer.readableBytes
        }
        switch state {
        case .idle, .closed:
            // Bytes no request asked for: the connection cannot be trusted with the next one.
            close(.brokenResponse)
        case .awaitingHead(let exchange, let interims, _):
            guard case .head(let head) = part else { return close(.brokenResponse) }
            if head.status == .switchingProtocols { return close(.unexpectedUpgrade) }
            // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message means its framing is
            // faulty, whatever the coding says: refused, and the connection closed.
            if head.version.major == 1, head.version.minor == 0, head.headers.contains(name: "transfer-encoding") {
                return close(.brokenResponse)
            }
            if head.status.code < 200 {
                guard interims < configuration.maximumInterimResponses else {
                    return close(.tooManyInterimResponses)
                }
                state = .awaitingHead(exchange, interims: interims + 1, receivedPart: true)
                exchange.interim(head)
                return
            }
            let isReusable = head.isKeepAlive && Self.isFramed(head, isHead: exchange.isHead)
            let length = Self.bodyLength(of: head, isHead: exchange.isHead)
            framing.beginBody(of: head, length: length)
            if let length, length <= configuration.wholeBodyLimit {
                state = .readingWholeBody(exchange, head: head, body: nil, isReusable: isReusable)
                return
            }
            let demand = UpstreamBodyDemand(
                handler: NIOLoopBound(self, eventLoop: context.eventLoop),
                exchange: exchangeID
            )
            let body = UpstreamResponseBody.makeSequence(
                backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8),
                finishOnDeinit: false,
                delegate: demand
            )
            let consumption = BodyConsumption(clock: configuration.clock)
            state = .streamingBody(exchange, body.source, isReusable: isReusable, consumption: consumption)
            exchange.promise.succeed(
                UpstreamResponse(head: head, body: .streaming(body.sequence, consumption: consumption))
            )
        case .readingWholeBody(let exchange, let head, var body, let isReusable):
            switch part {
            case .head:
                close(.brokenResponse)
            case .body(var buffer):
                // Out of the state first, so appending does not copy what came before.
                state = .closed
                if body == nil {
                    body = buffer
                } else {
                    body!.writeBuffer(&buffer)
                }
                // The decoder frames the body by its length; this only bounds a decoder that would not.
                guard body!.readableBytes <= configuration.wholeBodyLimit else {
                    state = .readingWholeBody(exchange, head: head, body: nil, isReusable: false)
                    return close(.brokenResponse)
                }
                state = .readingWholeBody(exchange, head: head, body: body, isReusable: isReusable)
            case .end:
                let reusable = endsReusable(isReusable, context: context)
                state = reusable ? .idle(since: configuration.clock.now()) : .closed
                exchange.promise.succeed(UpstreamResponse(head: head, body: .whole(body)))
                exchange.ended(reusable)
                if reusable { scheduleCheck() } else { context.close(promise: nil) }
            }
        case .streamingBody(let exchange, let source, let isReusable, _):
            switch part {
            case .head:
                close(.brokenResponse)
            case .body(let buffer):
                if case .stopProducing = source.yield(buffer) { readsPaused = true }
            case .end:
                source.finish()
                let reusable = endsReusable(isReusable, context: context)
                state = reusable ? .idle(since: configuration.clock.now()) : .closed
                resumeHeldRead(context: context)
                exchange.ended(reusable)
                if reusable { scheduleCheck() } else { context.close(promise: nil) }
            }
        }
    }

    /// Whether the connection may carry another exchange now that a response has ended: one
    /// framed on a persistent connection (`isReusable`), its request all sent, the channel open,
    /// and nothing after the response's end (``UpstreamResponseDecoder``). Ends the framing of
    /// the response either way.
    private func endsReusable(_ isReusable: Bool, context: ChannelHandlerContext) -> Bool {
        defer { framing.reset(awaitsHead: false) }
        return isReusable && requestComplete && context.channel.isActive && !framing.bytesFollow
    }

    /// RFC 9112 §6.3: the length of `head`'s body when its framing states it: 0 for a response
    /// to `HEAD`, a 204 or a 304, else its `Content-Length` when there is no `Transfer-Encoding`
    /// (which overrides it); `nil` when the body runs to a chunked end or to the close.
    static func bodyLength(of head: HTTPResponseHead, isHead: Bool) -> Int? {
        if isHead || head.status == .noContent || head.status == .notModified { return 0 }
        if head.headers.contains(name: "transfer-encoding") { return nil }
        let lengths = head.headers[canonicalForm: "content-length"]
        guard let first = lengths.first, lengths.allSatisfy({ $0 == first }) else { return nil }
        return Int(first).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// RFC 9112 §6.3: a response whose end its framing gives (no body, a length or the chunked
    /// coding); one read until the connection closes leaves nothing to reuse.
    private static func isFramed(_ head: HTTPResponseHead, isHead: Bool) -> Bool {
        if isHead || head.status == .noContent || head.status == .notModified { return true }
        if head.headers.contains(name: "content-length") { return true }
        return head.isChunked
    }

    /// The body's consumer wants more: reads flow again.
    func resumeReading(exchange: UInt64) {
        guard exchange == exchangeID, readsPaused, let context else { return }
        readsPaused = false
        lastRead = configuration.clock.now()
        resumeHeldRead(context: context)
        scheduleCheck()
    }

    /// The body's consumer stopped before its end: the rest of it would be the next exchange's
    /// first bytes, so the connection closes.
    func bodyDropped(exchange: UInt64) {
        guard exchange == exchangeID, case .streamingBody(let current, _, _, _) = state else { return }
        state = .closed
        current.ended(false)
        context?.close(promise: nil)
    }

    private func resumeHeldRead(context: ChannelHandlerContext) {
        readsPaused = false
        if heldRead {
            heldRead = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if readsPaused {
            heldRead = true
        } else {
            context.read()
        }
    }

    // MARK: - Failures

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        close(.brokenResponse, underlying: error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .awaitingHead(_, _, let receivedPart):
            // RFC 9112 §9.3.1: closed before any response: the request may be sent again.
            close(receivedPart ? .brokenResponse : .closedBeforeResponse)
        case .readingWholeBody, .streamingBody:
            close(.brokenResponse)
        case .idle, .closed:
            state = .closed
        }
        timer?.task.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    /// Fails the exchange in progress with `failure` and closes the connection.
    private func close(_ failure: UpstreamFailure, underlying: (any Error)? = nil) {
        let previous = state
        state = .closed
        framing.reset(awaitsHead: false)
        switch previous {
        case .awaitingHead(let exchange, _, _), .readingWholeBody(let exchange, _, _, _):
            exchange.promise.fail(StowageError.upstream(failure, origin: origin, underlying: underlying))
            exchange.ended(false)
        case .streamingBody(let exchange, let source, _, _):
            source.finish(StowageError.upstream(failure, origin: origin, underlying: underlying))
            exchange.ended(false)
        case .idle, .closed:
            break
        }
        context?.close(promise: nil)
    }

    // MARK: - Deadlines

    /// When the next deadline falls for the current state; `nil` for none.
    private var nextDeadline: NIODeadline? {
        switch state {
        case .idle(let since):
            return since + .nanoseconds(configuration.idleTimeout.saturatingNanoseconds)
        case .awaitingHead(let exchange, _, _):
            guard requestComplete else { return exchange.deadline }
            return min(exchange.deadline, lastRead + readTimeout)
        case .readingWholeBody:
            return lastRead + readTimeout
        case .streamingBody(_, _, _, let consumption):
            return readsPaused ? nil : max(lastRead, consumption.last ?? lastRead) + readTimeout
        case .closed:
            return nil
        }
    }

    private var readTimeout: TimeAmount { .nanoseconds(configuration.readTimeout.saturatingNanoseconds) }

    /// Makes sure the timer fires no later than the next deadline.
    private func scheduleCheck() {
        guard let context, let at = nextDeadline else { return }
        if let timer {
            if timer.at <= at { return }
            timer.task.cancel()
        }
        let task = configuration.clock.scheduleTask(on: context.eventLoop.assumeIsolated(), deadline: at) {
            self.check()
        }
        timer = (task, at)
    }

    /// Acts on a deadline that has passed, or waits for the next.
    private func check() {
        timer = nil
        let now = configuration.clock.now()
        switch state {
        case .idle(let since) where now >= since + .nanoseconds(configuration.idleTimeout.saturatingNanoseconds):
            state = .closed
            context?.close(promise: nil)
        case .awaitingHead(let exchange, _, _) where now >= exchange.deadline:
            close(.deadlineExceeded)
        case .awaitingHead where requestComplete && now >= lastRead + readTimeout:
            close(.readTimeout)
        case .readingWholeBody where now >= lastRead + readTimeout:
            close(.readTimeout)
        case .streamingBody(_, _, _, let consumption) where !readsPaused:
            // Not before the consumer has started: until then the proxy is not waiting.
            if let taken = consumption.last, now >= max(lastRead, taken) + readTimeout {
                close(.readTimeout)
            } else {
                if consumption.last == nil { lastRead = now }
                scheduleCheck()
            }
        default:
            scheduleCheck()
        }
    }
}
