import HTTPTypes

/// What a shared cache does with a response that sets a cookie (`Set-Cookie`, `Set-Cookie2`).
///
/// RFC 9111 lets a shared cache store such a response and replay its fields to every client
/// (§7.3 only warns about it), but a session cookie replayed to the next user is a leak: nginx
/// does not cache a response with `Set-Cookie` unless told to (`proxy_ignore_headers
/// Set-Cookie`), and Varnish's built-in `vcl_backend_response` marks it uncacheable. Stowage
/// follows them by default. A private cache serves one user and stores cookies as sent.
///
/// A response whose `Cache-Control` names `Set-Cookie` in a qualified `private` (§5.2.2.7) is
/// stored without the field whatever this says: the origin asked for exactly that.
///
/// A 304 that sets a cookie answers the client whose request was validated, as a 200 answers
/// the client of the miss: in every mode that client gets the 304's `Set-Cookie` with the
/// stored response it validated, and no other client gets it except under ``store``. Under
/// ``doNotStore`` such a 304 freshens nothing either (Varnish's built-in VCL: merge, deliver with
/// the cookie, mark uncacheable), so the next client validates in turn and gets its own; under
/// ``storeWithoutCookie`` it freshens the stored response without the cookie.
public enum SetCookieHandling: String, Sendable, Hashable, CaseIterable {
    /// Not stored: the response goes to the client that asked, and the next request goes to
    /// the origin too; a 304 that sets a cookie does not freshen the stored response. The
    /// default, nginx's and Varnish's.
    case doNotStore
    /// Stored without its `Set-Cookie` fields (nginx's `proxy_ignore_headers Set-Cookie` with
    /// `proxy_hide_header Set-Cookie`): the client of the miss gets its cookie, later clients
    /// get the body without one. For origins that set tracking cookies on cacheable pages.
    case storeWithoutCookie
    /// Stored and replayed with its cookies to every client, as RFC 9111 permits. Only for an
    /// origin whose cookies are the same for everyone.
    case store

    /// The fields this handling is about.
    static let fieldNames: Set<String> = ["set-cookie", "set-cookie2"]

    /// Whether `fields` set a cookie.
    static func setsCookie(_ fields: HTTPFields) -> Bool {
        fields.contains { fieldNames.contains($0.name.canonicalName) }
    }
}
