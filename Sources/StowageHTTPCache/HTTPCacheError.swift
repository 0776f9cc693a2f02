/// An error from the HTTP cache, with a code to match on and a message that says what to do.
public struct HTTPCacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Hashable {
        /// The policy forbids loading (``RequestCachePolicy/returnCacheDataDontLoad``) and nothing is stored.
        case notCached = "not cached"
        /// A body was longer than the caller allowed.
        case bodyTooLarge = "body too large"
        /// A configuration value is out of range.
        case invalidConfiguration = "invalid configuration"
        /// User info returned by the will-cache hook is over ``CacheProposal/maximumUserInfoCount``
        /// or ``CacheProposal/maximumUserInfoSize``; the response is not stored.
        case invalidUserInfo = "invalid user info"
    }

    /// The kind of failure.
    public var code: Code
    /// What failed and what the caller can do.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `"<code>: <message>"`, e.g. `"not cached: no stored response for …"`.
    public var description: String { "\(code.rawValue): \(message)" }

    static func notCached(_ key: CacheKey) -> HTTPCacheError {
        HTTPCacheError(
            code: .notCached,
            message: "no stored response for \(key.uri) and the policy returnCacheDataDontLoad forbids loading it; "
                + "load it once with another policy while online"
        )
    }

    static func bodyTooLarge(limit: Int) -> HTTPCacheError {
        HTTPCacheError(
            code: .bodyTooLarge,
            message: "the body is longer than \(limit) bytes; stream it instead of collecting it"
        )
    }
}
