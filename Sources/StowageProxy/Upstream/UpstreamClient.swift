import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageLoopClock
import Synchronization

/// The proxy's HTTP/1.1 client for `http://` upstreams, on SwiftNIO: kept-alive connections per
/// origin (``UpstreamConnectionPool``), bodies streamed both ways, and interim responses handed
/// to the caller instead of dropped.
///
/// AsyncHTTPClient drops 1xx responses, and a proxy must forward them (RFC 9110 §15.2); it also
/// costs more per request than the proxy's miss path can spare. `https://` upstreams still go
/// through AsyncHTTPClient (`UpstreamTransport`).
///
/// As `UpstreamTransport` does, it sends no hop-by-hop request fields, and sends an idempotent
/// request without a body once more, on a new connection and within the same deadline, when
/// its connection closed before any response (RFC 9112 §9.3.1; an idle connection the upstream
/// closed as the request went out). It follows no redirects and leaves bodies as sent.
final class UpstreamClient: Sendable {
    let configuration: Configuration
    private let pools = Mutex<[String: UpstreamConnectionPool]>([:])

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Sends `request` (to its authority, with its path) with `body`; `interim` receives each
    /// interim response (1xx but 101) before the response is returned.
    ///
    /// - Throws: `StowageError` whose cause is an ``UpstreamFailure``: `.unreachable` when the
    ///   upstream cannot be reached or does not answer in time, `.malformed` when its answer is
    ///   not HTTP/1.1. The body's sequence throws the same when the body breaks off.
    func fetch(
        _ request: HTTPRequest,
        body: HTTPBody?,
        interim: @escaping @Sendable (HTTPResponse) -> Void
    ) async throws -> (HTTPResponse, HTTPBody) {
        let pool = try pool(for: request.authority ?? "")
        let head = Self.head(of: request, body: body)
        let deadline = configuration.clock.now() + .nanoseconds(configuration.timeout.saturatingNanoseconds)
        let forward: @Sendable (HTTPResponseHead) -> Void = { interim(Self.response(from: $0)) }
        let response: UpstreamResponse
        do {
            response = try await pool.exchange(head, body: body, deadline: deadline, reusing: true, interim: forward)
        } catch let error as StowageError
            where error.upstreamFailure == .closedBeforeResponse && body == nil
            && UpstreamTransport.isIdempotent(request.method)
        {
            // RFC 9112 §9.3.1, as nginx's `proxy_next_upstream error`: once, on a new connection.
            response = try await pool.exchange(head, body: nil, deadline: deadline, reusing: false, interim: forward)
        }
        let final = Self.response(from: response.head)
        switch response.body {
        case .whole(let buffer):
            // In memory: the cache stores it and the proxy answers with it without reading on.
            return (final, HTTPBody(bytes: buffer.map { Array($0.readableBytesView) } ?? []))
        case .streaming(let sequence, let consumption):
            let length = final.headerFields[.contentLength].flatMap { Int64($0) }
            let body = sequence.map { buffer in
                consumption.took()
                return Array(buffer.readableBytesView)
            }
            return (final, HTTPBody(body, length: length))
        }
    }

    /// Closes the idle connections; exchanges in progress finish on theirs.
    func shutdown() {
        let pools = self.pools.withLock { Array($0.values) }
        for pool in pools { pool.closeIdle() }
    }

    private func pool(for authority: String) throws -> UpstreamConnectionPool {
        if let pool = pools.withLock({ $0[authority] }) { return pool }
        let (host, port) = try Self.hostAndPort(authority)
        let made = UpstreamConnectionPool(
            origin: "http://" + authority,
            host: host,
            port: port,
            configuration: configuration
        )
        return pools.withLock { pools in
            if let pool = pools[authority] { return pool }
            pools[authority] = made
            return made
        }
    }

    /// `host[:port]` or `[v6]:port`, port 80 by default.
    static func hostAndPort(_ authority: String) throws -> (String, Int) {
        var host = Substring(authority)
        var port = 80
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            guard let parsed = Int(authority[authority.index(after: colon)...]), (1...65_535).contains(parsed) else {
                throw StowageError.invalidArgument(
                    "the upstream authority '\(authority)' has no valid port; write it as host:port"
                )
            }
            port = parsed
            host = authority[..<colon]
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else {
            throw StowageError.invalidArgument("the upstream authority '\(authority)' has no host")
        }
        return (String(host), port)
    }

    /// The request head sent upstream: `Host` from the authority, the request's fields but
    /// hop-by-hop ones (`UpstreamTransport.headers(from:)`), and the body's framing.
    static func head(of request: HTTPRequest, body: HTTPBody?) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 2)
        headers.add(name: "Host", value: request.authority ?? "")
        headers.add(contentsOf: UpstreamTransport.headers(from: request.headerFields))
        if let body {
            if let length = body.length {
                headers.add(name: "Content-Length", value: String(length))
            } else {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            }
        }
        return HTTPRequestHead(
            version: .http1_1,
            method: HTTPMethod(rawValue: request.method.rawValue),
            uri: request.path ?? "/",
            headers: headers
        )
    }

    static func response(from head: HTTPResponseHead) -> HTTPResponse {
        // NIO's decoder knows no reason phrase for some codes (103): take swift-http-types'.
        let code = Int(head.status.code)
        let phrase = head.status.reasonPhrase
        var response = HTTPResponse(
            status: phrase.isEmpty ? HTTPResponse.Status(code: code) : .init(code: code, reasonPhrase: phrase)
        )
        response.headerFields = UpstreamTransport.fields(from: head.headers)
        return response
    }
}
