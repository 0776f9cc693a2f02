import HTTPTypes

/// How an operator shapes cache keys beyond RFC 9111's normalization (nginx's
/// `proxy_cache_key`): query parameters left out (tracking parameters such as `utm_source`) and
/// their order normalized, so URLs that name the same resource share one stored response; and
/// request header fields added, so requests that differ in them never share one.
///
/// ```swift
/// configuration.keyRules = CacheKeyRules(ignoredQueryParameters: ["utm_*", "fbclid"], sortsQueryParameters: true)
/// // https://example.com/a?utm_source=x&b=2&a=1  →  https://example.com/a?a=1&b=2
/// configuration.keyRules.headers = [HTTPField.Name("X-Tenant")!]
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
    /// Whether query parameters are sorted (by name, then value), so their order does not
    /// split entries.
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

    /// `key` with its query shaped by the rules.
    func apply(to key: CacheKey) -> CacheKey {
        guard !isIdentity, let mark = key.uri.firstIndex(of: "?") else { return key }
        var parameters = key.uri[key.uri.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true)
        parameters.removeAll { parameter in ignores(parameter.split(separator: "=", maxSplits: 1).first ?? parameter) }
        if sortsQueryParameters {
            parameters.sort { lhs, rhs in
                let left = lhs.split(separator: "=", maxSplits: 1).first ?? lhs
                let right = rhs.split(separator: "=", maxSplits: 1).first ?? rhs
                return left == right ? lhs < rhs : left < right
            }
        }
        let base = String(key.uri[..<mark])
        return CacheKey(uri: parameters.isEmpty ? base : base + "?" + parameters.joined(separator: "&"))
    }
}
