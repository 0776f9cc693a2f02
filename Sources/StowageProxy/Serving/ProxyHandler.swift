import AsyncHTTPClient
import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import Tracing

/// Answers one client request: through the shared cache to the upstream, then back with
/// `Age`, `Cache-Status` and without hop-by-hop fields.
struct ProxyHandler: Sendable {
    let configuration: ProxyConfiguration
    let cache: HTTPCache
    let transport: UpstreamTransport
    /// The client for an `http://` upstream; `nil` for `https://`, which goes through `transport`.
    let client: UpstreamClient?
    let metrics: ProxyMetrics

    init(
        configuration: ProxyConfiguration,
        cache: HTTPCache,
        transport: UpstreamTransport,
        client: UpstreamClient?,
        metrics: ProxyMetrics
    ) {
        self.configuration = configuration
        self.cache = cache
        self.transport = transport
        self.client = client
        self.metrics = metrics
    }

    /// The upstream exchange, timed into ``ProxyMetrics/recordUpstreamDuration(_:endedAt:)``;
    /// interim responses go to `interims`. The current trace goes with the request when `tracer`
    /// injects one (W3C `traceparent` with an OpenTelemetry tracer), so the origin's spans join it.
    private func fetch(forwardingTo interims: InterimForwarder?, tracer: any Tracer) -> HTTPFetch {
        let metrics = self.metrics
        let upstream: HTTPFetch
        if let client {
            upstream = { request, body in
                try await client.fetch(request, body: body, interim: { interims?.forward($0) })
            }
        } else {
            upstream = transport.asFetch
        }
        return { request, body in
            var request = request
            if let context = ServiceContext.current {
                tracer.inject(context, into: &request.headerFields, using: HTTPFieldsInjector())
            }
            let start = ContinuousClock.now
            defer {
                let end = ContinuousClock.now
                metrics.recordUpstreamDuration(end - start, endedAt: end)
            }
            return try await upstream(request, body)
        }
    }

    /// The response to `request`; the upstream's interim responses to it go to `interims`.
    ///
    /// Traced: one ``ProxyTracing/SpanName/request`` server span, continuing the trace the
    /// client's request carries when the tracer extracts one (W3C `traceparent` with an
    /// OpenTelemetry tracer). The memory hits answered on the event loop never come here.
    func respond(to request: Request, interims: InterimForwarder? = nil) async -> Response {
        let tracer = configuration.tracer ?? InstrumentationSystem.tracer
        var context = ServiceContext.current ?? .topLevel
        tracer.extract(request.head.headerFields, into: &context, using: HTTPFieldsExtractor())
        return await tracer.withSpanIfTracing(ProxyTracing.SpanName.request, context: context, ofKind: .server) {
            span in
            if span.isRecording {
                span.attributes[HTTPCacheTracing.Attribute.requestMethod] = request.head.method.rawValue
                // OpenTelemetry's url.path has no query: a query string may carry a credential.
                span.attributes[ProxyTracing.Attribute.urlPath] = request.uri.path
            }
            let response = await respond(to: request, interims: interims, tracer: tracer, span: span)
            if span.isRecording {
                span.attributes[HTTPCacheTracing.Attribute.responseStatusCode] = response.status.code
                // OpenTelemetry's HTTP server spans: a 5xx is an error, a 4xx is the client's.
                if response.status.kind == .serverError { span.setStatus(SpanStatus(code: .error)) }
            }
            return response
        }
    }

    /// ``respond(to:interims:)`` inside its span: notes the cache's outcome and the upstream's
    /// failure in `span`, and sends the trace on to the upstream through `tracer`.
    private func respond(
        to request: Request,
        interims: InterimForwarder?,
        tracer: any Tracer,
        span: any Span
    ) async -> Response {
        if request.head.method == .connect {
            // RFC 9110 §9.3.6: a 2xx to CONNECT turns the connection into a tunnel, which this
            // reverse proxy does not open; forwarded, an origin's 2xx would reach the client as a
            // framed response it takes for tunnel bytes. §15.6.2: 501 for a method not supported.
            return Self.plainResponse(
                .notImplemented,
                "the proxy does not open tunnels (CONNECT); send requests for the origin's resources",
                closing: true
            )
        }
        if let refusal = Self.refuseHost(request.head) { return refusal }
        let upstreamRequest = upstream(request.head)
        let hasBody = request.head.method != .get && request.head.method != .head
        var body: HTTPBody?
        if hasBody {
            let reader = RequestBodyReader(
                limit: Int(configuration.maximumRequestBodySize.rawValue),
                idleTimeout: configuration.requestBodyIdleTimeout,
                idleClock: configuration.requestBodyIdleClock
            )
            do {
                let declared = request.head.headerFields[.contentLength].flatMap { Int($0) }
                body = HTTPBody(bytes: try await reader.read(request.body, declaredLength: declared))
            } catch {
                configuration.logger.info(
                    "request body refused: \(error.message)",
                    metadata: ["path": "\(request.head.path ?? "/")", "status": "\(error.status.code)"]
                )
                return Self.plainResponse(error.status, error.message, closing: error.closesConnection)
            }
        }
        do {
            let served = try await cache.respond(
                to: upstreamRequest,
                body: body,
                fetch: fetch(forwardingTo: interims, tracer: tracer)
            )
            if span.isRecording { span.attributes[HTTPCacheTracing.Attribute.outcome] = served.outcome.rawValue }
            metrics.record(served.outcome)
            configuration.logger.debug(
                "\(request.head.method) \(request.head.path ?? "/") \(served.response.status.code) \(served.outcome)"
            )
            return Self.response(
                from: served,
                method: request.head.method,
                trace: configuration.sendsTrace,
                metrics: metrics
            )
        } catch {
            span.recordError(error)
            metrics.recordUpstreamError()
            let status = Self.status(for: error)
            configuration.logger.warning(
                "upstream failed: \(error)",
                metadata: ["path": "\(request.head.path ?? "/")", "status": "\(status.code)"]
            )
            var fields = HTTPFields()
            fields[.contentType] = "text/plain; charset=utf-8"
            fields[.cacheStatus] = CacheStatus(outcome: .miss, detail: "upstream: \(status.code)").description
            let message = ByteBuffer(
                string:
                    "\(status.code) \(status.reasonPhrase): the upstream \(configuration.upstream) \(status.code == 504 ? "did not answer in time" : "could not be reached")\n"
            )
            return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: message))
        }
    }

    /// RFC 9112 §3.2: a request without `Host`, or with more than one, is answered 400.
    ///
    /// The HTTP/1 codec moves the first `Host` into the request's authority and keeps any other
    /// among the fields. (It does not pass on the protocol version, so an HTTP/1.0 request
    /// without `Host` is refused too; every current client sends it.)
    static func refuseHost(_ head: HTTPRequest) -> Response? {
        let hostName = HTTPField.Name("Host")!
        if head.authority == nil || head.authority?.isEmpty == true {
            return plainResponse(.badRequest, "the request has no Host field (RFC 9112 §3.2)")
        }
        if !head.headerFields[values: hostName].isEmpty {
            return plainResponse(.badRequest, "the request has more than one Host field (RFC 9112 §3.2)")
        }
        return nil
    }

    /// A short plain-text answer from the proxy itself. `closing` says `Connection: close`,
    /// for failures after which the server closes the connection (its request stream ended).
    static func plainResponse(_ status: HTTPResponse.Status, _ message: String, closing: Bool = false) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.cacheStatus] = CacheStatus(outcome: .bypass, detail: "proxy: \(status.code)").description
        if closing { fields[.connection] = "close" }
        let text = "\(status.code) \(status.reasonPhrase): \(message)\n"
        fields[.contentLength] = String(text.utf8.count)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The client's request re-addressed to the upstream (the cache key is the upstream URL).
    func upstream(_ head: HTTPRequest) -> HTTPRequest {
        var request = head.addressed(
            scheme: configuration.upstream.scheme,
            authority: configuration.upstream.authority,
            pathPrefix: configuration.upstream.basePath
        )
        // NIO's HTTP/1 decoder reads `M-SEARCH` as its `HTTPMethod.MSEARCH`, whose raw value
        // drops the dash; the parser accepts no method spelled `MSEARCH`, so this is always
        // the client's `M-SEARCH` (SSDP, UPnP), which the origin must see as sent.
        if request.method.rawValue == "MSEARCH" { request.method = Self.mSearch }
        return request
    }

    private static let mSearch = HTTPRequest.Method("M-SEARCH")!

    /// 504 for timeouts, 502 for every other upstream failure.
    static func status(for error: any Error) -> HTTPResponse.Status {
        if let failure = (error as? StowageError)?.upstreamFailure {
            return failure.isTimeout ? .gatewayTimeout : .badGateway
        }
        if let error = error as? HTTPClientError,
            [
                HTTPClientError.deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout,
                .writeTimeout,
            ]
            .contains(error)
        {
            return .gatewayTimeout
        }
        return .badGateway
    }

    /// Connection-specific fields never forwarded to the client (RFC 9110 §7.6.1).
    static let hopByHop = HTTPField.Name.hopByHop

    /// The client's response for `served`; with `metrics`, the body bytes sent are counted by
    /// where they came from (as they stream, for a body not in memory).
    static func response(
        from served: CachedResponse,
        method: HTTPRequest.Method,
        trace: Bool = false,
        metrics: ProxyMetrics? = nil
    ) -> Response {
        var fields = clientFields(of: served, trace: trace)
        let status = served.response.status
        let body: ResponseBody
        if !served.hasContent(forMethod: method) {
            // RFC 9110 §8.6: a HEAD response may omit Content-Length but must not state one the
            // GET's content would not have; Hummingbird gives an empty body's length, 0. Without
            // a stated length, a body of unknown length leaves the framing to NIO's encoder, as
            // the answer from memory on the event loop does (ConnectionTimingHandler sends none).
            body =
                method == .head && fields[.contentLength] == nil
                ? ResponseBody(contentLength: nil) { writer in try await writer.finish(nil) } : ResponseBody()
        } else if let bytes = served.body.bytesInMemory {
            body = ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
            fields[.contentLength] = String(bytes.count)
            metrics?.recordServed(bytes.count, outcome: served.outcome)
        } else {
            let outcome = served.outcome
            body = ResponseBody(
                asyncSequence: served.body.map { chunk in
                    metrics?.recordServed(chunk.count, outcome: outcome)
                    return ByteBuffer(bytes: chunk)
                }
            )
        }
        return Response(status: status, headers: fields, body: body)
    }

    /// The fields of the client's response for `served`: its own, without hop-by-hop fields
    /// and the admin marker, with `Cache-Status` (and the trace when asked for).
    static func clientFields(of served: CachedResponse, trace: Bool) -> HTTPFields {
        var fields = served.clientFields(includingTrace: trace)
        // Only the admin listener may say it is one: an origin cannot pose as it to the admin
        // client through this listener and be sent the admin token.
        fields[values: AdminHandler.markerField] = []
        return fields
    }

    /// The response head and body ``respond(to:)`` would give for the cache's answer from
    /// memory (``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``), worked
    /// out without suspending, so the event loop can write it at once.
    func response(
        from answer: MemoryAnswer,
        method: String,
        uri: String
    ) -> (head: HTTPResponse, body: ByteBuffer?) {
        let served = answer.served
        configuration.logger.debug("\(method) \(uri) \(served.response.status.code) \(served.outcome)")
        var head = served.response
        head.headerFields = Self.clientFields(of: served, trace: configuration.sendsTrace)
        let status = served.response.status.code
        guard method != "HEAD", status != 304, status != 204, let bytes = served.body.bytesInMemory else {
            return (head, nil)
        }
        head.headerFields[.contentLength] = String(bytes.count)
        return (head, ByteBuffer(bytes: bytes))
    }
}
