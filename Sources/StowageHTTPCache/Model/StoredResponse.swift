import Foundation
import HTTPTypes

/// A response as a cache holds it: status and header fields (the body lives beside it in
/// storage), when it was requested and received, and what the decisions need later.
public struct StoredResponse: Sendable, Hashable {
    /// Status and header fields as stored: hop-by-hop fields removed, a `Date` added if the origin
    /// sent none (RFC 9110 §6.6.1).
    public var response: HTTPResponse {
        didSet { facts = Facts(response.headerFields, receivedAt: responseSeconds) }
    }
    /// The header fields the decisions read, parsed once when the response is set: every lookup
    /// of a stored response needs them, and parsing them per lookup cost more than the rest of
    /// the decision (`http-cache.lookup-hit`).
    private(set) var facts: Facts
    /// When the request that produced the response was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date {
        get { Date(timeIntervalSince1970: requestSeconds) }
        set { requestSeconds = Self.clampedTime(newValue.timeIntervalSince1970) }
    }
    /// When the response was received (RFC 9111 §4.2.3 `response_time`).
    public var responseTime: Date {
        get { Date(timeIntervalSince1970: responseSeconds) }
        set { responseSeconds = Self.clampedTime(newValue.timeIntervalSince1970) }
    }
    /// When set, the response is fresh until then whatever its headers say: a ``ForcedExpiry``
    /// rule matched when it was stored.
    public var forcedExpiry: Date? {
        get { forcedExpirySeconds.map { Date(timeIntervalSince1970: $0) } }
        set { forcedExpirySeconds = newValue?.timeIntervalSince1970 }
    }
    // The three times above in seconds since 1970, as the rules' arithmetic and the stored
    // record take them.
    var requestSeconds: Double
    var responseSeconds: Double
    var forcedExpirySeconds: Double?
    /// The request fields named by the response's `Vary`, as the original request had them
    /// (lowercased names; `nil` values for fields the request did not have).
    public var varyingFields: [VaryingField]
    /// The body's length in bytes, when known.
    public var bodyLength: Int64?
    /// Strings the will-cache hook attached (``CacheProposal/userInfo``), returned with every
    /// hit as ``CachedResponse/userInfo``; `NSCachedURLResponse`'s `userInfo`. Empty by default.
    public var userInfo: [String: String]

    /// One request field named by `Vary`, and the value the original request had.
    public struct VaryingField: Sendable, Hashable {
        /// The field name, lowercased.
        public var name: String
        /// The request's combined value, whitespace around commas normalized; `nil` if absent.
        public var value: String?

        /// Creates a varying field.
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// Creates a stored response.
    ///
    /// A `requestTime` or `responseTime` outside 1970 to the year 5000 is clamped into that
    /// range, so no later arithmetic traps.
    public init(
        response: HTTPResponse,
        requestTime: Date,
        responseTime: Date,
        varyingFields: [VaryingField] = [],
        forcedExpiry: Date? = nil,
        bodyLength: Int64? = nil,
        userInfo: [String: String] = [:]
    ) {
        self.init(
            response: response,
            requestSeconds: requestTime.timeIntervalSince1970,
            responseSeconds: responseTime.timeIntervalSince1970,
            varyingFields: varyingFields,
            forcedExpirySeconds: forcedExpiry?.timeIntervalSince1970,
            bodyLength: bodyLength,
            userInfo: userInfo
        )
    }

    /// ``init(response:requestTime:responseTime:varyingFields:forcedExpiry:bodyLength:userInfo:)``
    /// with the times in seconds since 1970, as the cache's clock and its records give them.
    init(
        response: HTTPResponse,
        requestSeconds: Double,
        responseSeconds: Double,
        varyingFields: [VaryingField] = [],
        forcedExpirySeconds: Double? = nil,
        bodyLength: Int64? = nil,
        userInfo: [String: String] = [:]
    ) {
        var response = response
        let requestTime = Self.clampedTime(requestSeconds)
        let responseTime = Self.clampedTime(responseSeconds)
        // RFC 9110 §6.6.1: a recipient with a clock that caches a response without Date appends
        // the time it received it (the freshness rules already count from it), so every copy
        // served later carries that time, not the time it is served.
        if response.headerFields[.date] == nil {
            response.headerFields[.date] = HTTPDate.format(Int64(responseTime))
        }
        self.response = response
        self.facts = Facts(response.headerFields, receivedAt: responseTime)
        self.requestSeconds = requestTime
        self.responseSeconds = responseTime
        self.varyingFields = varyingFields
        self.forcedExpirySeconds = forcedExpirySeconds
        self.bodyLength = bodyLength
        self.userInfo = userInfo
    }

    /// The latest time the rules take: the year 5000, in seconds since 1970.
    static let latestTime = 95_617_584_000.0

    /// `seconds` within 0…``latestTime``; NaN is 0.
    static func clampedTime(_ seconds: Double) -> Double {
        seconds.isNaN ? 0 : min(max(seconds, 0), latestTime)
    }

    /// The response's entity tag, if it has a valid one.
    public var entityTag: EntityTag? { facts.entityTag }

    /// The response's `Last-Modified`, in seconds since 1970, if valid.
    public var lastModified: Int64? { facts.lastModified }

    /// Parsed header fields of a stored response.
    struct Facts: Sendable, Hashable {
        let cacheControl: CacheControl
        let date: Int64?
        let expires: FieldDate
        let lastModified: Int64?
        let ageValue: Int
        let entityTag: EntityTag?

        /// The facts of `fields`, received at `responseSeconds` (an RFC 850 date's century is
        /// the one closest before it, RFC 9110 §5.6.7, so a record reads the same every time).
        init(_ fields: HTTPFields, receivedAt responseSeconds: Double) {
            cacheControl = fields.cacheControl
            date = fields.date(.date, now: responseSeconds).value
            expires = fields.date(.expires, strict: true, now: responseSeconds)
            lastModified = fields.date(.lastModified, now: responseSeconds).value
            ageValue = CacheRules.ageValue(fields)
            entityTag = fields[.eTag].flatMap { EntityTag(parsing: $0) }
        }
    }
}
