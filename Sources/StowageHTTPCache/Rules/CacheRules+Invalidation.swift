import HTTPTypes

extension CacheRules {
    /// Methods that are safe (RFC 9110 §9.2.1): they never invalidate.
    static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]

    /// §4.4: the keys to invalidate after `response` to `request`.
    ///
    /// An unsafe method with a non-error (2xx or 3xx) response invalidates the target URI, and
    /// the URIs in `Location` and `Content-Location` when they have the same origin (never
    /// another origin's, to stop denial-of-service through a foreign response).
    public func invalidatedKeys(request: HTTPRequest, response: HTTPResponse) -> [CacheKey] {
        guard !Self.safeMethods.contains(request.method), (200..<400).contains(response.status.code) else { return [] }
        let target = key(for: request)
        var keys = [target]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response.headerFields[name],
                let key = CacheKey(reference: value, base: target).map(keyRules.apply(to:)),
                key.origin == target.origin, !keys.contains(key)
            else { continue }
            keys.append(key)
        }
        return keys
    }

    /// §5.2.2.4: the response to serve from `stored` without validation: the fields named by a
    /// qualified `no-cache` removed (they must not be reused unvalidated).
    ///
    /// A shared cache that does not replay cookies (``setCookie`` other than
    /// ``SetCookieHandling/store``) also removes `Set-Cookie` here, whatever the stored response
    /// holds: a record can come from another node of the shared level configured to store
    /// cookies, from Redis written by anyone, or from this cache before its operator changed the
    /// setting.
    public func responseForReuse(_ stored: StoredResponse) -> HTTPResponse {
        var response = stored.response
        if isShared, setCookie != .store, SetCookieHandling.setsCookie(response.headerFields) {
            response.headerFields.removeAll { SetCookieHandling.fieldNames.contains($0.name.canonicalName) }
        }
        guard let fields = directives(of: stored).cacheControl.noCacheFields, !fields.isEmpty else {
            return response
        }
        for name in fields { if let name = HTTPField.Name(name) { response.headerFields[values: name] = [] } }
        return response
    }
}
