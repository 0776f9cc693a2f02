import Foundation
import HTTPTypes

extension CacheRules {
    /// Whether a response may be stored, and why not.
    public enum Storability: Sendable, Hashable, CustomStringConvertible {
        /// The response may be stored.
        case storable
        /// The response must not be stored, for the reason given (an RFC 9111 section).
        case notStorable(String)

        /// The text logs and messages show.
        public var description: String {
            switch self {
            case .storable: "storable"
            case .notStorable(let reason): "not storable: \(reason)"
            }
        }
    }

    /// RFC 9111 §3: whether `response` to `request` may be stored.
    ///
    /// - Parameters:
    ///   - response: The final response from the origin.
    ///   - request: The request it answers.
    ///   - forced: A ``ForcedExpiry`` rule matched: freshness information is not needed, and
    ///     `no-cache` does not matter (`no-store`, `private` in a shared cache and
    ///     `Authorization` still do).
    public func storability(of response: HTTPResponse, for request: HTTPRequest, forced: Bool = false) -> Storability {
        // RFC 9111 §3 "the request method is understood by the cache": Stowage stores GET only.
        guard request.method == .get else { return .notStorable("§3 only GET responses are stored") }
        let status = response.status.code
        // RFC 9111 §3 "the response status code is final": 1xx are not; 304 freshens, it is not stored.
        guard status >= 200 else { return .notStorable("§3 the status is not final") }
        guard status != 304 else { return .notStorable("§4.3.4 a 304 freshens stored responses") }
        guard status != 206 else { return .notStorable("§3.3 partial content is not combined") }
        let requestCC = request.headerFields.cacheControl
        let directives = directives(of: response.headerFields, cacheControl: response.headerFields.cacheControl)
        let responseCC = directives.cacheControl
        // RFC 9111 §3 "if the response status code is 206 or 304, or the must-understand cache directive is
        // present: the cache understands the response status code".
        if responseCC.mustUnderstand {
            guard understoodStatuses.contains(status) else {
                return .notStorable("§5.2.2.3 must-understand with a status this cache does not understand")
            }
        } else if responseCC.noStore {
            // §5.2.2.5; must-understand overrides no-store when the status is understood.
            return .notStorable("§5.2.2.5 the response has no-store")
        }
        if requestCC.noStore { return .notStorable("§5.2.1.5 the request has no-store") }
        if isShared, responseCC.isUnqualifiedPrivate {
            return .notStorable("§5.2.2.7 private responses are not stored by a shared cache")
        }
        // A session cookie replayed to the next user is a leak: nginx and Varnish do not store
        // such responses by default (``SetCookieHandling``). A qualified `private="Set-Cookie"`
        // already keeps the field out of what is stored.
        if isShared, setCookie == .doNotStore, SetCookieHandling.setsCookie(response.headerFields) {
            let privateFields = Set(responseCC.privateFields ?? [])
            if response.headerFields.contains(where: {
                SetCookieHandling.fieldNames.contains($0.name.canonicalName)
                    && !privateFields.contains($0.name.canonicalName)
            }) {
                return .notStorable(
                    "a shared cache does not store a response that sets a cookie (setCookie: doNotStore)"
                )
            }
        }
        // §3.5: a shared cache stores responses to requests with Authorization only when the
        // response explicitly allows it.
        if isShared, request.headerFields[.authorization] != nil,
            !(responseCC.mustRevalidate || responseCC.isPublic || responseCC.sharedMaxAge.isPresent)
        {
            return .notStorable(
                "§3.5 a request with Authorization in a shared cache, without public, s-maxage or must-revalidate"
            )
        }
        // §4.1: "Vary: *" always fails to match; storing it is pointless.
        if response.headerFields[values: .vary].contains(where: {
            $0.split(separator: ",").contains { $0.trimmingWhitespace() == "*" }
        }) {
            return .notStorable("§4.1 Vary: * never matches a later request")
        }
        if forced { return .storable }
        // RFC 9111 §3 "the response contains at least one of" the following; explicit freshness first.
        if directives.followsExpires, response.headerFields[.expires] != nil { return .storable }
        if responseCC.maxAge.isPresent { return .storable }
        if isShared, responseCC.sharedMaxAge.isPresent { return .storable }
        if defaultLifetimeSeconds[status] != nil { return .storable }
        // NSURLCache's rule (the AFNetworking write-up's "Cache-Control HTTP Header"): without
        // `max-age`, `s-maxage` or `Expires` nothing is stored, `public` alone included.
        guard heuristicFreshness else {
            return .notStorable(
                "no explicit freshness (max-age, s-maxage or Expires) and heuristicFreshness is off "
                    + "(NSURLCache's rule: Cache-Control or Expires must be present)"
            )
        }
        if responseCC.isPublic { return .storable }
        if !isShared, responseCC.isPrivate { return .storable }
        if Self.heuristicallyCacheableStatuses.contains(status) { return .storable }
        return .notStorable("§3 no explicit freshness and the status \(status) is not heuristically cacheable")
    }

    /// The header fields to store (§3.1): without hop-by-hop fields, without the fields of a
    /// qualified `private` in a shared cache (§5.2.2.7), with a `Date` if the origin sent none
    /// (RFC 9110 §6.6.1).
    public func fieldsToStore(_ fields: HTTPFields, responseTime: Date) -> HTTPFields {
        fieldsToStore(fields, responseTime: responseTime.timeIntervalSince1970)
    }

    /// ``fieldsToStore(_:responseTime:)`` with `responseTime` in seconds since 1970.
    func fieldsToStore(_ fields: HTTPFields, responseTime: Double) -> HTTPFields {
        var excluded = Self.hopByHopFieldNames
        for value in fields[values: .connection] {
            for name in value.split(separator: ",") { excluded.insert(name.trimmingWhitespace().lowercased()) }
        }
        if isShared,
            let privateFields = directives(of: fields, cacheControl: fields.cacheControl).cacheControl.privateFields
        {
            excluded.formUnion(privateFields)
        }
        // Unless the operator chose to replay cookies, none is stored, so none reaches another
        // user; this also keeps a 304's `Set-Cookie` out of the response it freshens.
        if isShared, setCookie != .store { excluded.formUnion(SetCookieHandling.fieldNames) }
        var stored = HTTPFields()
        stored.reserveCapacity(fields.count + 1)
        for field in fields where !excluded.contains(field.name.canonicalName) { stored.append(field) }
        if stored[.date] == nil { stored[.date] = HTTPDate.format(Int64(responseTime)) }
        return stored
    }

    /// Connection-specific fields a cache never stores or forwards (§3.1, RFC 9110 §7.6.1).
    static let hopByHopFieldNames: Set<String> = [
        "connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
    ]
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (OWS).
    func trimmingWhitespace() -> Substring {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return Substring(slice)
    }
}
