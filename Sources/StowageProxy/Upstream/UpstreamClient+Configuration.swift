import NIOCore
import NIOHTTP1
import StowageCore
import StowageLoopClock

extension UpstreamClient {
    /// The deadlines and limits of an ``UpstreamClient``.
    struct Configuration: Sendable {
        /// The longest a connection may take to open; never past ``timeout``. Default 10 s
        /// (AsyncHTTPClient's default connect timeout, which the proxy used before).
        var connectTimeout: Duration = .seconds(10)
        /// The longest the upstream may stay silent once the request is sent: before the head
        /// and between body parts (paused while the client is not taking the body).
        var readTimeout: Duration = .seconds(60)
        /// The longest a request may take until its response head has arrived, a retry included.
        var timeout: Duration = .seconds(60)
        /// The idle connections kept per origin; a connection released past it is closed
        /// (nginx's upstream `keepalive`). Default 64, the connection limit the proxy's
        /// AsyncHTTPClient had.
        var maximumIdleConnections: Int = 64
        /// How long an idle connection is kept before the proxy closes it (nginx's upstream
        /// `keepalive_timeout`, whose default this is). Default 60 s.
        var idleTimeout: Duration = .seconds(60)
        /// The interim (1xx) responses one request may receive before the upstream is taken to
        /// be misbehaving and the request fails (a bad gateway). Default 32.
        var maximumInterimResponses: Int = 32
        /// The largest body, by its `Content-Length`, read whole on the connection's event loop
        /// before the response is handed over, instead of streamed: the response then costs the
        /// proxy no hop per body part and goes to the client in one write, head and body (nginx
        /// buffers upstream responses the same way, `proxy_buffering`, 4–8 KiB pages up to
        /// 64 KiB). Default 64 KiB. A body without a length, or longer, streams.
        var wholeBodyLimit: Int = 64 << 10
        /// The response head limits (NIO's defaults: 80 KiB of fields).
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        /// What the deadlines above are measured and scheduled by
        /// (``ProxyConfiguration/timeoutClock``). Default: NIO's own.
        var clock = LoopClock.system

        /// ``connectTimeout`` as NIO takes it.
        var connectTimeoutAmount: TimeAmount { .nanoseconds(connectTimeout.saturatingNanoseconds) }
    }
}
