import NIOCore
import NIOHTTP1

/// A response body as the upstream connection reads it: chunks handed over with backpressure,
/// so the connection reads from the socket only as fast as the body is taken.
typealias UpstreamResponseBody = NIOThrowingAsyncSequenceProducer<
    ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, UpstreamBodyDemand
>

/// What a consumer of an ``UpstreamResponseBody`` tells the connection: read more, or stop (the
/// body was dropped before its end, so the connection cannot carry another exchange).
///
/// It names its exchange: a late signal about an exchange that ended must not touch the next one.
struct UpstreamBodyDemand: NIOAsyncSequenceProducerDelegate {
    let handler: NIOLoopBound<UpstreamExchangeHandler>
    let exchange: UInt64

    func produceMore() {
        let handler = self.handler
        let exchange = self.exchange
        handler.eventLoop.execute { handler.value.resumeReading(exchange: exchange) }
    }

    func didTerminate() {
        let handler = self.handler
        let exchange = self.exchange
        handler.eventLoop.execute { handler.value.bodyDropped(exchange: exchange) }
    }
}

/// A response head from the upstream and its body.
struct UpstreamResponse: Sendable {
    /// How the body comes.
    enum Body: Sendable {
        /// Read whole on the event loop before the head was handed over: a body whose
        /// `Content-Length` is at most ``UpstreamClient/Configuration/wholeBodyLimit``
        /// (`nil` for none: a `HEAD`, a 204, a 304, a length of 0).
        case whole(ByteBuffer?)
        /// Streaming as the connection reads it; the consumer notes each part it takes in
        /// `consumption`.
        case streaming(UpstreamResponseBody, consumption: BodyConsumption)
    }

    var head: HTTPResponseHead
    var body: Body
}
