import Foundation
import HTTPTypes

/// A rule that keeps matching responses fresh for a fixed interval after they are stored,
/// whatever their `Cache-Control` or `Expires` say — the `NSURLCache` subclass iOS
/// apps write for this (`CustomURLCacheExpirationInterval`) as configuration.
///
/// The rule makes a response storable without freshness information and overrides `no-cache`,
/// `must-revalidate`, `max-age` and `Expires`. It never overrides `no-store`, `private` in a
/// shared cache or `Authorization` (those protect other people's data), nor the request's own
/// directives (a caller asking for `no-cache` still gets a validated response).
///
/// ```swift
/// configuration.forcedExpiry = [
///     .init(host: "api.example.com", pathPrefix: "/v1/catalog", interval: .seconds(600)),
///     .init(interval: .seconds(60)) { request in request.path?.hasSuffix(".json") == true },
/// ]
/// ```
public struct ForcedExpiry: Sendable {
    /// How long a matching response stays fresh after it is stored.
    public var interval: Duration
    private let matches: @Sendable (HTTPRequest) -> Bool

    /// A rule for requests `matching` returns `true` for.
    public init(interval: Duration, matching: @escaping @Sendable (HTTPRequest) -> Bool) {
        self.interval = interval
        self.matches = matching
    }

    /// A rule for a host (case-insensitive, port ignored) and a path prefix.
    public init(host: String, pathPrefix: String = "/", interval: Duration) {
        let host = host.lowercased()
        self.init(interval: interval) { request in
            let authority = (request.authority ?? "").lowercased()
            let requestHost = authority.split(separator: ":", maxSplits: 1).first.map(String.init) ?? authority
            return requestHost == host && (request.path ?? "/").hasPrefix(pathPrefix)
        }
    }

    /// Whether the rule applies to `request`.
    public func applies(to request: HTTPRequest) -> Bool { matches(request) }
}
