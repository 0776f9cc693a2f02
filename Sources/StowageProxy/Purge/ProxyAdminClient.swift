import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StowageCore

/// Talks to a running proxy's admin listener (``ProxyConfiguration/AdminListener``): purge one
/// URL, ban by prefix or tag, read the metrics page. `stowage proxy purge` and `stowage proxy
/// ban` are this type on the command line.
///
/// ```swift
/// let admin = try ProxyAdminClient(address: "127.0.0.1:9000", token: ProcessInfo.processInfo.environment["STOWAGE_ADMIN_TOKEN"])
/// let removed = try await admin.ban(tag: "product-42")
/// ```
public final class ProxyAdminClient: Sendable {
    /// `http://HOST:PORT` of the admin listener.
    public let baseURL: String
    private let token: String?
    private let timeout: TimeAmount

    /// A client for the admin listener at `address` (`HOST:PORT`).
    ///
    /// - Parameters:
    ///   - address: The admin listener's `HOST:PORT` (the proxy's `--admin-listen`).
    ///   - token: The listener's token, sent as `Authorization: Bearer TOKEN`.
    ///   - timeout: How long one request may take.
    /// - Throws: `StowageError` `.invalidArgument` when `address` is not `HOST:PORT`.
    public init(address: String, token: String? = nil, timeout: Duration = .seconds(10)) throws {
        let (host, port) = try ProxyConfiguration.parseListenAddress(address)
        guard port > 0 else {
            throw StowageError.invalidArgument("the admin address \(address.debugDescription) needs a port above 0")
        }
        baseURL = "http://" + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        self.token = token
        self.timeout = .nanoseconds(
            Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        )
    }

    /// Removes the stored responses of `url` (every variant). Returns whether any was stored.
    ///
    /// - Throws: `StowageError`: `.unreachable` when the listener does not answer, `.refused`
    ///   when it answers with an error (a wrong token, a relative URL).
    public func purge(url: String) async throws -> Bool {
        let (status, _) = try await post("/purge", ["url": url])
        return status == .ok
    }

    /// Removes every stored response whose URL starts with `prefix`; returns how many URLs.
    public func ban(prefix: String) async throws -> Int {
        try Self.count(of: await post("/ban", ["prefix": prefix]))
    }

    /// Removes every stored response tagged `tag` (`Surrogate-Key` / `Cache-Tag`); returns how many URLs.
    public func ban(tag: String) async throws -> Int {
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
        var request = HTTPClientRequest(url: baseURL + path + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer " + token) }
        // A client per request (admin requests are rare): one that fails at once when nothing
        // listens, instead of retrying the connection until the timeout.
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await client.execute(request, timeout: timeout)
            body = try await response.body.collect(upTo: 16 << 20)
            try? await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw StowageError(
                code: .unreachable,
                message:
                    "the admin listener at \(baseURL) did not answer (\(error)); check that the proxy runs with --admin-listen at that address"
            )
        }
        let text = String(buffer: body).trimmingCharacters(in: .whitespacesAndNewlines)
        // 404 from /purge means "nothing stored", an answer, not a failure.
        guard response.status == .ok || (response.status == .notFound && path == "/purge") else {
            throw StowageError(code: .refused, message: "the admin listener answered \(response.status.code): \(text)")
        }
        return (response.status, text)
    }

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
