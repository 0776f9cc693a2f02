import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache

/// Sends swift-http-types requests through AsyncHTTPClient and returns swift-http-types
/// responses with streamed bodies: the `HTTPFetch` the cache needs.
///
/// Bodies stream both ways; nothing is collected whole. Hop-by-hop request fields and `Host`
/// are not forwarded (AsyncHTTPClient sets `Host` from the URL).
public struct UpstreamTransport: Sendable {
    /// The client that carries the requests.
    public let client: HTTPClient
    /// The longest a request may take, body included.
    public var timeout: Duration
    /// What ``timeout`` is measured by. Default `ContinuousClock()`: real time, which the
    /// client's own deadline enforces. With another clock (a `SteppedClock` a test advances) the
    /// request fails with `HTTPClientError.deadlineExceeded` when that clock passes the timeout;
    /// the client's own connect and read timeouts stay on real time.
    public var timeoutClock: any Clock<Duration>

    /// A transport over `client`.
    public init(
        client: HTTPClient,
        timeout: Duration = .seconds(60),
        timeoutClock: any Clock<Duration> = ContinuousClock()
    ) {
        self.client = client
        self.timeout = timeout
        self.timeoutClock = timeoutClock
    }

    /// An AsyncHTTPClient configured for caching: redirects are not followed (a cache stores
    /// and serves 3xx responses itself), decompression off (bodies are stored as sent), and a
    /// refused connection fails at once instead of being retried until the deadline (so an
    /// upstream that is down is a prompt 502, or a stale response, not a wait).
    ///
    /// - Parameter readTimeout: The longest the upstream may stay silent once the request is
    ///   sent — before the head and between body parts. The request's own deadline
    ///   (``timeout``) ends when the head arrives, so without this an upstream that stalls
    ///   mid-body would hold the client until the upstream closed. Default 60 s.
    public static func makeClient(readTimeout: Duration = .seconds(60)) -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.read = .nanoseconds(readTimeout.saturatingNanoseconds)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Sends `request` (to the URL its scheme, authority and path make) with `body`.
    public func fetch(_ request: HTTPRequest, body: HTTPBody?) async throws -> (HTTPResponse, HTTPBody) {
        let (response, body, _) = try await fetchWithHops(request, body: body)
        return (response, body)
    }

    /// One response of an exchange and the URL it answered. A client that follows redirects
    /// makes several; the last is the response returned.
    struct Hop {
        var url: URL?
        var fields: HTTPFields
    }

    /// ``fetch(_:body:)``, with every response of the exchange in order, redirects included:
    /// what a cookie store needs to scope each `Set-Cookie` to the host that sent it.
    func fetchWithHops(_ request: HTTPRequest, body: HTTPBody?) async throws -> (HTTPResponse, HTTPBody, [Hop]) {
        var outgoing = HTTPClientRequest(url: Self.url(of: request))
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        outgoing.headers = Self.headers(from: request.headerFields)
        if let body {
            let length: HTTPClientRequest.Body.Length = body.length.map { .known($0) } ?? .unknown
            outgoing.body = .stream(body.map { ByteBuffer(bytes: $0) }, length: length)
        }
        let response: HTTPClientResponse
        // Real time is the client's own deadline; another clock's is a timer beside the request
        // (started here, so a retry keeps the same deadline).
        let clock = timeoutClock is ContinuousClock ? nil : ElapsedClock(timeoutClock)
        let deadline: NIODeadline =
            clock == nil ? NIODeadline.now() + .nanoseconds(timeout.saturatingNanoseconds) : .distantFuture
        do {
            response = try await withTimeout(on: clock) { [outgoing] in
                try await client.execute(outgoing, deadline: deadline)
            }
        } catch let error as HTTPClientError
            where error == .remoteConnectionClosed && body == nil
            && Self.isIdempotent(request.method)
        {
            // A kept-alive connection the upstream closed as the request went out (its idle
            // timeout): RFC 9112 §9.3.1 lets an idempotent request be sent again, as nginx's
            // `proxy_next_upstream error` does, on a new connection and within the same deadline.
            response = try await withTimeout(on: clock) { [outgoing] in
                try await client.execute(outgoing, deadline: deadline)
            }
        }
        var head = HTTPResponse(
            status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
        )
        head.headerFields = Self.fields(from: response.headers)
        let length = head.headerFields[.contentLength].flatMap { Int64($0) }
        let body = HTTPBody(response.body.map { Array($0.readableBytesView) }, length: length)
        var hops = response.history.map {
            Hop(url: URL(string: $0.request.url), fields: Self.fields(from: $0.responseHead.headers))
        }
        if hops.isEmpty { hops = [Hop(url: URL(string: Self.url(of: request)), fields: head.headerFields)] }
        return (head, body, hops)
    }

    /// `body`, failed with `.deadlineExceeded` when `clock` (``timeoutClock`` wrapped when the
    /// request started; `nil` for real time, which the client's deadline measures) shows ``timeout``.
    private func withTimeout(
        on clock: ElapsedClock?,
        _ body: @escaping @Sendable () async throws -> HTTPClientResponse
    ) async throws -> HTTPClientResponse {
        guard let clock else { return try await body() }
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: HTTPClientResponse?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await clock.sleep(until: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let response = try await group.next() ?? nil else { throw HTTPClientError.deadlineExceeded }
            return response
        }
    }

    /// RFC 9110 §9.2.2: methods whose request may be sent again with the same effect.
    package static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        [.get, .head, .options, .trace, .put, .delete].contains(method)
    }

    /// The transport as the cache's fetch closure.
    public var asFetch: HTTPFetch { { request, body in try await fetch(request, body: body) } }

    static func url(of request: HTTPRequest) -> String {
        (request.scheme ?? "http") + "://" + (request.authority ?? "") + (request.path ?? "/")
    }

    /// Request fields to send upstream: hop-by-hop fields, the fields `Connection` names and
    /// `Host` stay behind.
    package static func headers(from fields: HTTPFields) -> HTTPHeaders {
        var excluded: Set<String> = [
            "connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade", "host",
            "proxy-authorization", "content-length",
        ]
        for value in fields[values: .connection] {
            for name in value.split(separator: ",") {
                excluded.insert(name.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count)
        for field in fields where !excluded.contains(field.name.canonicalName) {
            headers.add(name: field.name.rawName, value: field.value)
        }
        return headers
    }

    /// Response fields as swift-http-types fields; names that are not valid tokens are dropped.
    package static func fields(from headers: HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }
}
