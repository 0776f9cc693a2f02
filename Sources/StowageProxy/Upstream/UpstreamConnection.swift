import NIOCore
import NIOHTTP1
import NIOPosix
import StowageCore
import StowageHTTPCache
import StowageLoopClock

/// One HTTP/1.1 connection to an upstream: NIO's request encoder and response decoder with an
/// ``UpstreamExchangeHandler`` after them, carrying one exchange at a time.
final class UpstreamConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<UpstreamExchangeHandler>

    private init(channel: any Channel, handler: NIOLoopBound<UpstreamExchangeHandler>) {
        self.channel = channel
        self.handler = handler
    }

    /// Opens a connection to `host`:`port` within the connect timeout and before `deadline`.
    ///
    /// The pipeline is the one `addHTTPClientHandlers` builds (encoder, decoder, request-field
    /// validator), but with the decoder forwarding interim responses instead of dropping them,
    /// and fed a response at a time (``UpstreamResponseDecoder``).
    ///
    /// - Throws: `StowageError` `.unreachable`: the connection was refused or timed out.
    static func connect(
        host: String,
        port: Int,
        origin: String,
        configuration: UpstreamClient.Configuration,
        deadline: NIODeadline
    ) async throws -> UpstreamConnection {
        let timeout = min(configuration.connectTimeoutAmount, deadline - configuration.clock.now())
        guard timeout > .zero else { throw StowageError.upstream(.deadlineExceeded, origin: origin) }
        let limits = configuration.decoderLimits
        let bootstrap = ClientBootstrap(group: NIOSingletons.posixEventLoopGroup)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    let framing = UpstreamResponseFraming()
                    try pipeline.addHandler(HTTPRequestEncoder())
                    try pipeline.addHandler(
                        ByteToMessageHandler(
                            UpstreamResponseDecoder(
                                HTTPResponseDecoder(
                                    leftOverBytesStrategy: .dropBytes,
                                    informationalResponseStrategy: .forward,
                                    limitConfiguration: limits
                                ),
                                framing: framing
                            )
                        )
                    )
                    try pipeline.addHandler(NIOHTTPRequestHeadersValidator())
                    try pipeline.addHandler(
                        UpstreamExchangeHandler(configuration: configuration, origin: origin, framing: framing)
                    )
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch ChannelError.connectTimeout {
            let failure: UpstreamFailure =
                timeout < configuration.connectTimeoutAmount ? .deadlineExceeded : .connectTimeout
            throw StowageError.upstream(failure, origin: origin)
        } catch {
            throw StowageError.upstream(.cannotConnect, origin: origin, underlying: error)
        }
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(
                try channel.pipeline.syncOperations.handler(type: UpstreamExchangeHandler.self),
                eventLoop: channel.eventLoop
            )
        }.get()
        return UpstreamConnection(channel: channel, handler: handler)
    }

    /// Sends `head` and `body` and returns the response head once it has come, its body
    /// streaming; `interim` receives each interim response before it, and `ended` is called once
    /// the exchange is over (`true`: the connection can carry another).
    ///
    /// - Throws: `StowageError` with an ``UpstreamFailure`` as its cause.
    func exchange(
        _ head: HTTPRequestHead,
        body: HTTPBody?,
        deadline: NIODeadline,
        interim: @escaping @Sendable (HTTPResponseHead) -> Void,
        ended: @escaping @Sendable (Bool) -> Void
    ) async throws -> UpstreamResponse {
        let promise = channel.eventLoop.makePromise(of: UpstreamResponse.self)
        let exchange = UpstreamExchangeHandler.Exchange(
            promise: promise,
            interim: interim,
            ended: ended,
            deadline: deadline,
            isHead: head.method == .HEAD
        )
        let handler = self.handler
        let hasBody = body != nil
        channel.eventLoop.execute { handler.value.start(head, hasBody: hasBody, exchange: exchange) }
        if let body { await send(body) }
        return try await promise.futureResult.get()
    }

    /// Streams `body` up, waiting whenever the socket takes no more (the channel is not
    /// writable), then the request's end. A body that fails to read, or a connection that closes,
    /// leaves the request unfinished: the connection closes and the exchange fails.
    private func send(_ body: HTTPBody) async {
        do {
            for try await chunk in body {
                guard channel.isActive else { return }
                let written = channel.eventLoop.makePromise(of: Void.self)
                channel.writeAndFlush(
                    HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: chunk))),
                    promise: written
                )
                if !channel.isWritable { try await written.futureResult.get() }
            }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        } catch {
            channel.close(promise: nil)
        }
    }

    /// Closes the connection.
    func close() {
        channel.close(promise: nil)
    }
}
