import HTTPTypes

extension HTTPRequest {
    /// This request addressed as a cache keys it: with `scheme` and `authority` (which form the
    /// cache key with the path), and its path after `pathPrefix`.
    ///
    /// The caching proxy re-addresses a client's request to its upstream with it; the server
    /// middlewares fill in the scheme and host a server's request lacks.
    ///
    /// - Parameters:
    ///   - scheme: `http` or `https`.
    ///   - authority: The host, with a port when not the scheme's default.
    ///   - pathPrefix: Put before the request's path (a proxy's upstream base path); default none.
    public func addressed(scheme: String, authority: String, pathPrefix: String = "") -> HTTPRequest {
        var request = self
        request.scheme = scheme
        request.authority = authority
        request.path = pathPrefix + (path ?? "/")
        return request
    }
}
