import Foundation

/// One HTTP cookie as RFC 6265 §5.3 stores it: a name and value with the scope (domain and
/// path) and the attributes that decide where it is sent.
///
/// Cookies are made by ``CookieStore`` from `Set-Cookie` header fields; read them with
/// ``CookieStore/cookies(for:)`` or ``CookieStore/allCookies``.
public struct Cookie: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The `SameSite` attribute (RFC 6265bis §4.1.2.7), as the server sent it.
    ///
    /// Stowage's client is not a browser: it has no "site for cookies", so every request it
    /// makes is same-site and the attribute changes nothing about which cookies are sent (as
    /// curl and other non-browser clients do). It is parsed and kept so that an app that shows
    /// or exports cookies sees it.
    public enum SameSite: String, Sendable, Hashable, Codable, CaseIterable {
        /// `SameSite=Strict`.
        case strict
        /// `SameSite=Lax`.
        case lax
        /// `SameSite=None`.
        case none
    }

    /// The cookie's name; never empty.
    public var name: String
    /// The cookie's value, as the server sent it (no decoding).
    public var value: String
    /// The domain the cookie belongs to, lowercased, without a leading dot.
    public var domain: String
    /// `true` when the `Set-Cookie` had no `Domain` attribute: the cookie goes back only to
    /// exactly ``domain``, not to its subdomains (RFC 6265 §5.3 step 6).
    public var isHostOnly: Bool
    /// The path the cookie is scoped to; starts with `/`.
    public var path: String
    /// `Secure`: sent only over `https` (and `wss`).
    public var isSecure: Bool
    /// `HttpOnly`: kept from scripts in a browser. An HTTP client sends it like any other cookie.
    public var isHTTPOnly: Bool
    /// `SameSite`, or `nil` when the server sent none (or a value other than the three).
    public var sameSite: SameSite?
    /// When the cookie expires; `nil` for a session cookie (no `Expires` or `Max-Age`).
    public var expiresDate: Date?
    /// When the store first received a cookie of this name, domain and path (kept when the
    /// server replaces it, RFC 6265 §5.3 step 11.3).
    public var creationDate: Date
    /// When the cookie was last sent or set.
    public var lastAccessDate: Date

    /// Whether the cookie outlives the session: it has an expiry date.
    public var isPersistent: Bool { expiresDate != nil }

    /// `name=value`, as it appears in a `Cookie` header field.
    public var description: String { "\(name)=\(value)" }

    /// A cookie with every field given, e.g. to compare with what a store holds. Nothing is
    /// checked here; ``CookieStore`` makes its cookies only from `Set-Cookie` fields, which it
    /// checks.
    public init(
        name: String,
        value: String,
        domain: String,
        isHostOnly: Bool = true,
        path: String = "/",
        isSecure: Bool = false,
        isHTTPOnly: Bool = false,
        sameSite: SameSite? = nil,
        expiresDate: Date? = nil,
        creationDate: Date = Date(),
        lastAccessDate: Date? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.isHostOnly = isHostOnly
        self.path = path
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.expiresDate = expiresDate
        self.creationDate = creationDate
        self.lastAccessDate = lastAccessDate ?? creationDate
    }

    /// What identifies a cookie in a store: a new cookie with the same name, domain and path
    /// replaces the old one (RFC 6265 §5.3 step 11).
    struct Identity: Hashable {
        var name: String
        var domain: String
        var path: String
    }

    var identity: Identity { Identity(name: name, domain: domain, path: path) }
}
