/// How one request uses the cache: the six request cache policies of `URLCache`/`NSURLRequest`
/// on top of the RFC 9111 rules.
public enum RequestCachePolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Follow RFC 9111: serve fresh responses, validate stale ones, honour the request's and the
    /// response's directives (`NSURLRequestUseProtocolCachePolicy`).
    case useProtocolCachePolicy
    /// Ignore what is stored and load from the origin; the response is still stored when
    /// storable (`NSURLRequestReloadIgnoringLocalCacheData`).
    case reloadIgnoringLocalCacheData
    /// As ``reloadIgnoringLocalCacheData``, and caches between here and the origin are told to
    /// reload too: the request goes upstream with `Cache-Control: no-cache` and
    /// `Pragma: no-cache` (RFC 9111 §5.2.1.4, §5.4) added to its own directives
    /// (`NSURLRequestReloadIgnoringLocalAndRemoteCacheData`, which `URLSession` never
    /// implemented). The response is still stored when storable.
    case reloadIgnoringLocalAndRemoteCacheData
    /// Serve any stored response, however old, without validation; load only on a miss
    /// (`NSURLRequestReturnCacheDataElseLoad`).
    case returnCacheDataElseLoad
    /// Offline: serve any stored response, however old; never contact the origin. A miss throws
    /// `StowageError` `.notCached` (`NSURLRequestReturnCacheDataDontLoad`).
    case returnCacheDataDontLoad
    /// Always validate a stored response with the origin before serving it; load on a miss
    /// (`NSURLRequestReloadRevalidatingCacheData`).
    case reloadRevalidatingCacheData
}
