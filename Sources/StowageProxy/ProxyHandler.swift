import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import StowageHTTPCache
import StowageHTTPClient

/// Answers one client request: through the shared cache to the upstream, then back with
/// `Age`, `Cache-Status` and without hop-by-hop fields.
struct ProxyHandler: Sendable {
    let configuration: ProxyConfiguration
    let cache: HTTPCache
    let transport: UpstreamTransport
    let outcomes: [CacheOutcome: Counter]
    let errors: Counter

    init(configuration: ProxyConfiguration, cache: HTTPCache, transport: UpstreamTransport) {
        self.configuration = configuration
        self.cache = cache
        self.transport = transport
        var outcomes: [CacheOutcome: Counter] = [:]
        for outcome in [CacheOutcome.hit, .miss, .revalidated, .stale, .bypass] {
            outcomes[outcome] = Counter(
                label: "stowage_proxy_responses_total",
                dimensions: [("outcome", outcome.rawValue)]
            )
        }
        self.outcomes = outcomes
        errors = Counter(label: "stowage_proxy_upstream_errors_total")
    }

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        let upstreamRequest = upstream(request.head)
        let hasBody = request.head.method != .get && request.head.method != .head
        let body: HTTPBody? = hasBody ? HTTPBody(request.body.map { Array($0.readableBytesView) }) : nil
        do {
            let served = try await cache.respond(to: upstreamRequest, body: body, fetch: transport.asFetch)
            outcomes[served.outcome]?.increment()
            configuration.logger.debug(
                "\(request.head.method) \(request.head.path ?? "/") \(served.response.status.code) \(served.outcome)"
            )
            return Self.response(from: served, method: request.head.method, trace: configuration.sendsTrace)
        } catch {
            errors.increment()
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

    /// The client's request re-addressed to the upstream (the cache key is the upstream URL).
    func upstream(_ head: HTTPRequest) -> HTTPRequest {
        var request = head
        request.scheme = configuration.upstream.scheme
        request.authority = configuration.upstream.authority
        request.path = configuration.upstream.basePath + (head.path ?? "/")
        return request
    }

    /// 504 for timeouts, 502 for every other upstream failure.
    static func status(for error: any Error) -> HTTPResponse.Status {
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
    static let hopByHop: [HTTPField.Name] = [
        .connection, .transferEncoding, .upgrade, .te, .proxyAuthenticate,
        HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!,
    ]

    /// The name of the opt-in debug field that carries ``CachedResponse/trace``.
    static let traceField = HTTPField.Name("Stowage-Cache-Trace")!

    static func response(from served: CachedResponse, method: HTTPRequest.Method, trace: Bool = false) -> Response {
        var fields = served.response.headerFields
        for name in fields[values: .connection].flatMap({ $0.split(separator: ",") }) {
            if let named = HTTPField.Name(String(name.trimmingPrefix(while: { $0 == " " }))) {
                fields[values: named] = []
            }
        }
        for name in hopByHop { fields[values: name] = [] }
        fields[.cacheStatus] = served.status.description
        if trace {
            // Field values are visible ASCII (RFC 9110 §5.5): "§" becomes "section ".
            var text = ""
            for scalar in served.trace.joined(separator: " | ").unicodeScalars {
                if scalar == "§" {
                    text += "section "
                } else {
                    text.unicodeScalars.append(scalar.isASCII && scalar.value >= 0x20 ? scalar : "?")
                }
            }
            fields[traceField] = text
        }
        let status = served.response.status
        let body: ResponseBody
        if method == .head || status.code == 304 || status.code == 204 {
            body = ResponseBody()
        } else if let bytes = served.body.bytesInMemory {
            body = ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
            fields[.contentLength] = String(bytes.count)
        } else {
            body = ResponseBody(asyncSequence: served.body.map { ByteBuffer(bytes: $0) })
        }
        return Response(status: status, headers: fields, body: body)
    }
}
