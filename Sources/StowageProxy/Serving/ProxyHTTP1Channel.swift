import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import StowageLoopClock

/// The proxy's HTTP/1 connection: HummingbirdCore's `HTTP1Channel` pipeline with the proxy's
/// ``ConnectionTimingHandler`` between NIO's HTTP/1 codec and the conversion to swift-http-types,
/// where it still sees the protocol version.
///
/// It adds what `HTTP1Channel` does not do: a deadline for a request's head (nginx's
/// `client_header_timeout`), an idle deadline between kept-alive requests (nginx's
/// `keepalive_timeout`), a deadline for a client that stops reading (nginx's `send_timeout`),
/// and HTTP/1.0's default of one request per connection (RFC 9112 §9.3).
struct ProxyHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    /// The longest a request's head may take to arrive.
    let headTimeout: TimeAmount
    /// The longest a kept-alive connection may stay idle between requests.
    let keepAliveTimeout: TimeAmount
    /// The longest a client may leave a full outbound buffer unread.
    let sendTimeout: TimeAmount
    /// What the three deadlines are measured and scheduled by.
    let timeoutClock: LoopClock
    /// Answers hits held in memory on the event loop (``MemoryHitHandler``); `nil` sends every
    /// request to `responder`.
    let hitResponder: LoopHitResponder?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // First, so it sees every byte the encoder writes (the send deadline's progress).
            let outboundBytes = OutboundByteCounter()
            try channel.pipeline.syncOperations.addHandler(outboundBytes)
            // NIO's HTTP/1 codec, as `configureHTTPServerPipeline` adds it without pipelining
            // assistance, error handling (HummingbirdCore answers parse errors with 400) or
            // header validation (swift-http-types validated the fields), but with the decoder
            // not telling the encoder each request's method: hits kept as bytes are written past
            // the encoder, which would otherwise pair the next response with the wrong request.
            // `ConnectionTimingHandler` leaves the body out of responses to HEAD instead.
            try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder(configuration: .init()))
            try channel.pipeline.syncOperations.addHandler(
                ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes))
            )
            let timing = ConnectionTimingHandler(
                headTimeout: headTimeout,
                keepAliveTimeout: keepAliveTimeout,
                sendTimeout: sendTimeout,
                clock: timeoutClock,
                outboundBytes: outboundBytes
            )
            try channel.pipeline.syncOperations.addHandler(timing)
            if let hitResponder {
                try channel.pipeline.syncOperations.addHandler(
                    MemoryHitHandler(responder: hitResponder, timing: timing, outbound: outboundBytes)
                )
            }
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // Graceful shutdown: closes idle connections, lets requests in flight finish.
            try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(
                wrappingChannelSynchronously: channel,
                configuration: .init(isOutboundHalfClosureEnabled: true)
            )
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
