import HTTPTypes

/// A request that skips the cache's lookup and goes to the origin (nginx's
/// `proxy_cache_bypass`): a debugging header, a session cookie, an admin path. The response is
/// still stored when storable, so the next plain request gets the new copy.
public enum CacheBypassRule: Sendable, Hashable, CustomStringConvertible {
    /// The request has this header with a value other than empty or `0` (nginx's rule).
    case header(HTTPField.Name)
    /// The request's `Cookie` header names this cookie.
    case cookie(String)
    /// The request's path starts with this prefix.
    case pathPrefix(String)

    /// Whether `request` matches.
    public func matches(_ request: HTTPRequest) -> Bool {
        switch self {
        case .header(let name):
            return request.headerFields[values: name].contains { !$0.isEmpty && $0 != "0" }
        case .cookie(let name):
            return request.headerFields[values: .cookie].contains { line in
                line.split(separator: ";").contains { pair in
                    (pair.split(separator: "=", maxSplits: 1).first ?? "").trimmingWhitespace() == name
                }
            }
        case .pathPrefix(let prefix):
            return (request.path ?? "/").hasPrefix(prefix)
        }
    }

    /// The text logs and messages show.
    public var description: String {
        switch self {
        case .header(let name): "header \(name.rawName)"
        case .cookie(let name): "cookie \(name)"
        case .pathPrefix(let prefix): "path \(prefix)"
        }
    }
}
