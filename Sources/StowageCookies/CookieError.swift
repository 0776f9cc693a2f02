/// Why a cookie was refused: the `Set-Cookie` was malformed, too large, or scoped to a domain
/// the response may not set cookies for.
///
/// `CookieStore/setCookie(_:from:)` throws it; `CookieStore/setCookies(_:from:)` ignores
/// such cookies as RFC 6265 §5.3 says a user agent does, and returns the errors.
public struct CookieError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of refusal.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: String, Hashable, Sendable {
            case malformed
            case tooLarge = "too large"
            case domainMismatch = "domain mismatch"
            case publicSuffix = "public suffix"
            case notSecure = "not secure"
            case invalidURL = "invalid URL"
        }
        fileprivate let value: Value
        fileprivate init(_ value: Value) { self.value = value }

        /// No `name=value` pair, an empty name, or control characters (RFC 6265 §5.2,
        /// RFC 6265bis §5.6 step 2).
        public static let malformed = Code(.malformed)
        /// The name and value together exceed ``CookieStore/Configuration/maximumCookieSize``.
        public static let tooLarge = Code(.tooLarge)
        /// The `Domain` attribute does not domain-match the request's host (RFC 6265 §5.3
        /// step 6), or the host is an IP address and the domain is not exactly it.
        public static let domainMismatch = Code(.domainMismatch)
        /// The `Domain` attribute is a public suffix such as `com` or `co.uk` (RFC 6265 §5.3
        /// step 5): one site may not set a cookie for every site under it.
        public static let publicSuffix = Code(.publicSuffix)
        /// `Secure` cookies (and `__Secure-`/`__Host-` names) are accepted only from `https`
        /// (RFC 6265bis §5.6 steps 14 and 20–21), and a cookie from `http` may not replace or
        /// shadow a `Secure` one of the same name (RFC 6265bis §5.7 step 16).
        public static let notSecure = Code(.notSecure)
        /// The URL has no scheme or host to scope a cookie to.
        public static let invalidURL = Code(.invalidURL)

        /// The code as logs show it.
        public var description: String { value.rawValue }

        /// Lets `catch CookieError.Code.publicSuffix` match.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? CookieError)?.code == code
        }
    }

    /// The kind of refusal.
    public var code: Code
    /// What was refused and why.
    public var message: String

    /// An error with `code` and `message`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `"code: message"`.
    public var description: String { "\(code): \(message)" }
}
