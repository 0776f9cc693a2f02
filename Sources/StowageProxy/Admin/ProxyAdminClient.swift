import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StowageCore

/// Talks to a running proxy's admin listener (``ProxyConfiguration/AdminListener``): invalidate
/// one URL, a URL prefix or a tag, read the metrics page. `stowage proxy invalidate` is this type
/// on the command line.
///
/// ```swift
/// let admin = try ProxyAdminClient(address: "127.0.0.1:9000", token: ProcessInfo.processInfo.environment["STOWAGE_ADMIN_TOKEN"])
/// let removed = try await admin.invalidate(tag: "product-42")
/// ```
///
/// The token goes to the admin listener and nowhere else. Every request is sent first without
/// it; the client adds `Authorization: Bearer TOKEN` and sends it again only when the answer is
/// the listener's own 401: `Stowage-Admin: 1` and `WWW-Authenticate: Bearer
/// realm="stowage-admin"` (RFC 6750 §3). The proxy's main listener drops `Stowage-Admin` from
/// what an origin answers, so an address that is the main listener by mistake never sees the
/// token pass through it to the origin. Any answer without `Stowage-Admin` is a
/// `StowageError` `.refused` saying the address is not an admin listener: a main listener's
/// 404 is never read as "not stored". A listener without a token answers the first request;
/// one with a token costs one more round trip per request.
public final class ProxyAdminClient: Sendable {
    /// `http://HOST:PORT` of the admin listener.
    public let baseURL: String
    private let address: String
    private let token: String?
    private let timeout: TimeAmount

    /// A client for the admin listener at `address` (`HOST:PORT`).
    ///
    /// - Parameters:
    ///   - address: The admin listener's `HOST:PORT` (the proxy's `--admin-listen`).
    ///   - token: The listener's token, sent as `Authorization: Bearer TOKEN`.
    ///   - timeout: How long one request may take. Default 30 s: a proxy starting up on a loaded machine
    ///     can take seconds to answer its first request (curl has no default at all).
    /// - Throws: `StowageError` `.invalidArgument` when `address` is not `HOST:PORT` or `token`
    ///   is not one a listener can take (``ProxyConfiguration/AdminListener/checkToken(_:)``).
    public init(address: String, token: String? = nil, timeout: Duration = .seconds(30)) throws {
        let (host, port) = try ProxyConfiguration.parseListenAddress(address)
        guard port > 0 else {
            throw StowageError.invalidArgument("the admin address \(address.debugDescription) needs a port above 0")
        }
        if let token { try ProxyConfiguration.AdminListener.checkToken(token) }
        self.address = address
        baseURL = "http://" + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        self.token = token
        self.timeout = .nanoseconds(
            Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        )
    }

    /// Removes the stored responses of `url` (every variant). Returns whether any was stored.
    ///
    /// - Throws: `StowageError`: `.unreachable` when the listener does not answer, `.refused`
    ///   when it answers with an error (a wrong token, a relative URL) or the address is not an
    ///   admin listener.
    public func invalidate(url: String) async throws -> Bool {
        let (status, _) = try await post("/purge", ["url": url])
        return status == .ok
    }

    /// Removes every stored response whose URL starts with `prefix`; returns how many URLs.
    public func invalidate(urlPrefix prefix: String) async throws -> Int {
        try Self.count(of: await post("/ban", ["prefix": prefix]))
    }

    /// Removes every stored response tagged `tag` (`Surrogate-Key` / `Cache-Tag`); returns how many URLs.
    public func invalidate(tag: String) async throws -> Int {
        try Self.count(of: await post("/ban", ["tag": tag]))
    }

    /// The listener's `GET /metrics` page (Prometheus text format).
    public func metrics() async throws -> String {
        try await send(.GET, "/metrics", [:]).body
    }

    private func post(_ path: String, _ parameters: [String: String]) async throws -> (HTTPResponseStatus, String) {
        let reply = try await send(.POST, path, parameters)
        return (reply.status, reply.body)
    }

    private func send(
        _ method: HTTPMethod,
        _ path: String,
        _ parameters: [String: String]
    ) async throws
        -> (status: HTTPResponseStatus, body: String)
    {
        let query = parameters.sorted { $0.key < $1.key }.map { name, value in
            name + "=" + (value.addingPercentEncoding(withAllowedCharacters: Self.queryValueCharacters) ?? "")
        }
        let url = baseURL + path + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        var reply = try await exchange(method, url, token: nil)
        if reply.status == .unauthorized, let token, Self.isChallenge(reply.headers) {
            reply = try await exchange(method, url, token: token)
        }
        let text = String(buffer: reply.body).trimmingCharacters(in: .whitespacesAndNewlines)
        guard reply.headers.first(name: Self.markerField) == "1" else {
            throw StowageError(
                code: .refused,
                message: """
                    \(address) is not a stowage admin listener (it answered \(reply.status.code) without \
                    '\(Self.markerField): 1'; is it the proxy's main listener?); give the address of the proxy's \
                    --admin-listen
                    """
            )
        }
        if reply.status == .unauthorized {
            let hint =
                token == nil
                ? "it needs a token: give --admin-token TOKEN or set STOWAGE_ADMIN_TOKEN"
                : "the token is not the listener's --admin-token"
            throw StowageError(code: .refused, message: "the admin listener answered 401: \(hint)")
        }
        // 404 from /purge means "nothing stored", an answer, not a failure.
        guard reply.status == .ok || (reply.status == .notFound && path == "/purge") else {
            throw StowageError(code: .refused, message: "the admin listener answered \(reply.status.code): \(text)")
        }
        return (reply.status, text)
    }

    /// One request, with `Authorization: Bearer token` when `token` is given.
    private func exchange(
        _ method: HTTPMethod,
        _ url: String,
        token: String?
    ) async throws -> (status: HTTPResponseStatus, headers: HTTPHeaders, body: ByteBuffer) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer " + token) }
        // A client per request (admin requests are rare): one that fails at once when nothing
        // listens, instead of retrying the connection until the timeout.
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        // A redirect would carry the token to wherever it points.
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            let response = try await client.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 16 << 20)
            try? await client.shutdown()
            return (response.status, response.headers, body)
        } catch {
            try? await client.shutdown()
            throw StowageError(
                code: .unreachable,
                message:
                    "the admin listener at \(baseURL) did not answer (\(error)); check that the proxy runs with --admin-listen at that address"
            )
        }
    }

    /// The admin listener's own 401: its marker and its `Bearer` challenge (RFC 6750 §3).
    private static func isChallenge(_ headers: HTTPHeaders) -> Bool {
        headers.first(name: markerField) == "1"
            && headers["WWW-Authenticate"].contains {
                $0.lowercased().hasPrefix("bearer ") && $0.contains("realm=\"stowage-admin\"")
            }
    }

    /// `AdminHandler.markerField`'s name.
    private static let markerField = "Stowage-Admin"

    /// `banned 3` → 3.
    private static func count(of reply: (HTTPResponseStatus, String)) throws -> Int {
        guard let count = reply.1.split(separator: " ").last.flatMap({ Int($0) }) else {
            throw StowageError(
                code: .refused,
                message: "the admin listener's answer \(reply.1.debugDescription) has no count"
            )
        }
        return count
    }

    /// RFC 3986 unreserved characters: everything else in a value is percent-encoded.
    private static let queryValueCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}
