import HTTPTypes

/// How an operator shapes cache keys beyond RFC 9111's normalization (nginx's
/// `proxy_cache_key`): query parameters left out (tracking parameters such as `utm_source`) and
/// their order normalized, so URLs that name the same resource share one stored response; and
/// request header fields added, so requests that differ in them never share one.
///
/// ```swift
/// configuration.rules.keyRules = CacheKeyRules(ignoredQueryParameters: ["utm_*", "fbclid"], sortsQueryParameters: true)
/// // https://example.com/a?utm_source=x&b=2&a=1  →  https://example.com/a?a=1&b=2
/// configuration.rules.keyRules.headers = [HTTPField.Name("X-Tenant")!]
/// // a response stored for X-Tenant: a is never served to X-Tenant: b (or to a request without it)
/// ```
///
/// Names are compared as they are written in the URI (no percent-decoding). The rules apply to
/// every key the cache makes: lookups, stores and §4.4 invalidations alike. Header fields act
/// as if every response's `Vary` named them (§4.1): they select among the stored variants of a
/// URL, so purging or invalidating the URL still removes all of them.
public struct CacheKeyRules: Sendable, Hashable {
    /// Query parameters left out of the key: exact names, or prefixes ending in `*` (`utm_*`).
    public var ignoredQueryParameters: [String]
    /// Whether query parameters are sorted by name, so their order does not split entries.
    /// The sort is stable: parameters that share a name keep their order (`?a=2&a=1` and
    /// `?a=1&a=2` are different resources to most origins, so they stay different keys).
    public var sortsQueryParameters: Bool
    /// Request header fields whose values are part of the key (nginx's `$http_NAME` in
    /// `proxy_cache_key`), compared as `Vary` compares them: absent matches only absent.
    public var headers: [HTTPField.Name]

    /// Rules that drop `ignoredQueryParameters`, sort the query when `sortsQueryParameters`, and
    /// key on `headers` as an implicit `Vary`.
    public init(
        ignoredQueryParameters: [String] = [],
        sortsQueryParameters: Bool = false,
        headers: [HTTPField.Name] = []
    ) {
        self.ignoredQueryParameters = ignoredQueryParameters
        self.sortsQueryParameters = sortsQueryParameters
        self.headers = headers
    }

    /// Whether the rules leave keys as RFC 9111 makes them.
    var isIdentity: Bool { ignoredQueryParameters.isEmpty && !sortsQueryParameters }

    /// Whether the parameter named `name` is left out.
    func ignores(_ name: Substring) -> Bool {
        ignoredQueryParameters.contains { pattern in
            pattern.hasSuffix("*") ? name.hasPrefix(pattern.dropLast()) : name == pattern
        }
    }

    /// `request` without the query parameters the key leaves out, as it goes to the origin.
    ///
    /// The origin must not see what the key ignores: an origin that reflects a parameter
    /// (`?utm_source=<script>…` echoed into the page) would otherwise put one client's value into
    /// the entry every client shares — cache poisoning. Varnish's URL normalisation in
    /// `vcl_recv` strips tracking parameters from `req.url` for the same reason. Order is left
    /// as the client sent it.
    public func removingIgnoredParameters(from request: HTTPRequest) -> HTTPRequest {
        guard !ignoredQueryParameters.isEmpty, let path = request.path, let mark = path.firstIndex(of: "?") else {
            return request
        }
        let query = path[path.index(after: mark)...]
        let parameters = query.split(separator: "&", omittingEmptySubsequences: true)
        let kept = parameters.filter { parameter in
            !ignores(parameter.split(separator: "=", maxSplits: 1).first ?? parameter)
        }
        guard kept.count != parameters.count else { return request }
        var stripped = request
        stripped.path = String(path[..<mark]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        return stripped
    }

    /// `key` with its query shaped by the rules.
    func apply(to key: CacheKey) -> CacheKey {
        guard !isIdentity, let mark = key.uri.firstIndex(of: "?") else { return key }
        var parameters = key.uri[key.uri.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true)
        parameters.removeAll { parameter in ignores(parameter.split(separator: "=", maxSplits: 1).first ?? parameter) }
        if sortsQueryParameters {
            // By name only, ties kept in the order given (the index breaks them: `sort` is not
            // documented as stable).
            var named: [(name: Substring, offset: Int, parameter: Substring)] = []
            named.reserveCapacity(parameters.count)
            for (offset, parameter) in parameters.enumerated() {
                named.append((parameter.split(separator: "=", maxSplits: 1).first ?? parameter, offset, parameter))
            }
            named.sort { lhs, rhs in lhs.name == rhs.name ? lhs.offset < rhs.offset : lhs.name < rhs.name }
            parameters = named.map(\.parameter)
        }
        let base = String(key.uri[..<mark])
        return CacheKey(uri: parameters.isEmpty ? base : base + "?" + parameters.joined(separator: "&"))
    }
}
