import Foundation
import StowageCore

extension CookieStore {
    /// The limits and rules of a cookie store. The defaults are the floors RFC 6265 §6.1 asks
    /// every user agent to support, which browsers meet.
    public struct Configuration: Sendable {
        /// The largest name plus value a cookie may have; larger ones are refused with
        /// `StowageError` `.tooLarge`. Default 4096 bytes (RFC 6265 §6.1, and the limit
        /// browsers apply).
        public var maximumCookieSize: ByteCount = ByteCount(4096)
        /// The most cookies kept for one site (registrable domain, e.g. `example.co.uk`).
        /// Beyond it, the least recently used cookie of the site is evicted. Default 50
        /// (RFC 6265 §6.1's "at least 50 cookies per domain").
        public var maximumCookiesPerDomain: Int = 50
        /// The most cookies kept in all. Beyond it, the least recently used cookie is evicted.
        /// Default 3000 (RFC 6265 §6.1).
        public var maximumCookieCount: Int = 3000
        /// The longest lifetime a cookie gets, whatever its `Expires` or `Max-Age` say.
        /// Default 400 days (RFC 6265bis §5.6 steps 3 and 4, as Chrome and Firefox cap).
        public var maximumLifetime: Duration = .seconds(400 * 86_400)
        /// Public suffixes refused as a `Domain` (RFC 6265 §5.3 step 5). Default
        /// ``PublicSuffixList/system``: the Debian `publicsuffix` list when installed, else
        /// the built-in list.
        public var publicSuffixes: PublicSuffixList = .system
        /// Whether session cookies (no `Expires` or `Max-Age`) are written to the file too.
        /// Default `false`: as in browsers, a session cookie lives as long as the store
        /// object, and a store opened again starts without them.
        public var persistsSessionCookies: Bool = false

        /// The default configuration.
        public init() {}
    }
}
