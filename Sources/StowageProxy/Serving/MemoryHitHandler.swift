import NIOCore
import NIOHTTP1

/// Answers requests whose fresh response is held in memory on the connection's event loop,
/// and passes every other request on to the async server after it.
///
/// A hit is the proxy's common case, and on the async path it is mostly not cache work: the
/// request crosses from the event loop into Swift's cooperative pool and the response comes
/// back, with the allocations and retains of each hop (see Benchmarks/README.md). Here the
/// lookup is synchronous (``LoopHitResponder``, on `HTTPCache.answerFromMemory`) and the response is written
/// where the request was read, as nginx and Varnish answer hits on the thread that read them.
///
/// It sits after ``ConnectionTimingHandler``, so a hit's response passes its deadlines and
/// HTTP/1.0 handling like any other, and answers only when no earlier request on the
/// connection is still being answered by the async path: responses leave in request order
/// (RFC 9112 §9.3.2, pipelining). Event-loop bound: every method runs on the channel's loop.
final class MemoryHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: LoopHitResponder
    /// The connection's deadlines and request bookkeeping, told of responses written past it.
    private let timing: ConnectionTimingHandler
    /// Where encoded responses are written, past NIO's HTTP/1 encoder.
    private let outbound: OutboundByteCounter
    /// Requests passed on to the async path whose responses have not ended.
    private var passedOn = 0
    /// Whether the rest of a request answered here (its body, its end) is being dropped.
    private var droppingAnsweredRequest = false
    /// Whether a response was written here since the last flush.
    private var needsFlush = false

    init(responder: LoopHitResponder, timing: ConnectionTimingHandler, outbound: OutboundByteCounter) {
        self.responder = responder
        self.timing = timing
        self.outbound = outbound
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if passedOn == 0, let answer = answerFromMemory(head) {
                droppingAnsweredRequest = true
                write(answer, context: context)
                return
            }
            passedOn += 1
        case .body, .end:
            if droppingAnsweredRequest {
                if case .end = unwrapInboundIn(data) { droppingAnsweredRequest = false }
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    /// The answer from memory, for a request that has no body and asks nothing the async path
    /// alone handles (`Expect: 100-continue`, an upgrade).
    private func answerFromMemory(_ head: HTTPRequestHead) -> LoopHitResponder.Answer? {
        guard head.method == .GET || head.method == .HEAD else { return nil }
        let headers = head.headers
        if headers.contains(name: "content-length") || headers.contains(name: "transfer-encoding")
            || headers.contains(name: "expect") || headers.contains(name: "upgrade")
        {
            return nil
        }
        return responder.answer(head)
    }

    private func write(_ answer: LoopHitResponder.Answer, context: ChannelHandlerContext) {
        switch answer {
        case .response(let head, let body):
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
        case .encoded(let response):
            // Every earlier response has been written (`passedOn` is 0), so these bytes follow
            // them on the wire.
            timing.encodedResponseWritten()
            outbound.writeEncoded(response.bytes)
            if let body = response.separateBody { outbound.writeEncoded(body) }
        }
        needsFlush = true
    }
}
