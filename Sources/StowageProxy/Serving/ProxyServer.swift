import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import StowageCore
import StowageHTTPCache
import StowageLoopClock

/// The proxy's HTTP/1 server: HummingbirdCore's server with a responder that leaves the
/// response's fields as the cache made them.
///
/// `Hummingbird.Application` sets `Date` to its own clock on every response. A cache must pass
/// on the origin's `Date` (RFC 9110 §6.6.1; the client computes the response's age from it and
/// `Age`, RFC 9111 §4.2.3), so the proxy runs the server itself and adds `Date` only where a
/// response has none: its own answers (errors) and an origin that sent none (§6.6.1: a
/// recipient with a clock appends the time it received the response).
///
/// Connections go through ``ProxyHTTP1Channel``: head and idle deadlines, and HTTP/1.0's one
/// request per connection.
struct ProxyServer: Service {
    /// Answers a request; interim responses from the upstream go to the forwarder, which is
    /// closed once the response is ready.
    let respond: @Sendable (Request, InterimForwarder) async -> Response
    /// Answers hits held in memory on the event loop, before `respond` (``MemoryHitHandler``).
    var hitResponder: LoopHitResponder? = nil
    /// Counts each request from its head until its response's last byte is written: a body
    /// streamed from the upstream or a file holds its buffers and tasks that long, not only
    /// while `respond` works out the response.
    var workingMemory: WorkingMemoryCharge? = nil
    let configuration: ServerConfiguration
    /// The longest a request's head may take (nginx's `client_header_timeout`).
    let headTimeout: Duration
    /// The longest a kept-alive connection may stay idle (nginx's `keepalive_timeout`).
    let keepAliveTimeout: Duration
    /// The longest a client may leave its response unread (nginx's `send_timeout`).
    let sendTimeout: Duration
    /// What the three deadlines are measured and scheduled by (``ProxyConfiguration/timeoutClock``).
    var timeoutClock = LoopClock.system
    /// The time a `Date` field the server adds gives: the proxy cache's clock
    /// (`HTTPCache.Configuration.clock`), the one its ages are computed by.
    let dateClock: CacheClock
    let logger: Logger
    let onServerRunning: @Sendable (any Channel) async -> Void

    func run() async throws {
        let respond = self.respond
        let dateClock = self.dateClock
        let hitResponder = self.hitResponder
        let workingMemory = self.workingMemory
        let headTimeout = TimeAmount.nanoseconds(headTimeout.saturatingNanoseconds)
        let keepAliveTimeout = TimeAmount.nanoseconds(keepAliveTimeout.saturatingNanoseconds)
        let sendTimeout = TimeAmount.nanoseconds(sendTimeout.saturatingNanoseconds)
        let timeoutClock = self.timeoutClock
        let builder = HTTPServerBuilder { responder in
            ProxyHTTP1Channel(
                responder: responder,
                headTimeout: headTimeout,
                keepAliveTimeout: keepAliveTimeout,
                sendTimeout: sendTimeout,
                timeoutClock: timeoutClock,
                hitResponder: hitResponder
            )
        }
        let server = try builder.buildServer(
            configuration: configuration,
            eventLoopGroup: NIOSingletons.posixEventLoopGroup,
            logger: logger,
            responder: { request, responseWriter, channel in
                workingMemory?.begin()
                defer { workingMemory?.end() }
                let interims = InterimForwarder(channel: channel)
                var response = await respond(request, interims)
                interims.close()
                if response.headers[.date] == nil {
                    response.headers[.date] = HTTPDate.format(Int64(dateClock.now().timeIntervalSince1970))
                }
                try await responseWriter.write(response: response.head, body: response.body)
            },
            onServerRunning: onServerRunning
        )
        try await server.run()
    }
}
