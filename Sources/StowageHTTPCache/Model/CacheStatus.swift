import HTTPTypes

/// How a response was served, the same facts the proxy sends in `Cache-Status` (RFC 9211).
public enum CacheOutcome: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// A stored response was fresh (or the policy allowed it) and was served without contacting
    /// the origin.
    case hit
    /// Nothing usable was stored; the response came from the origin.
    case miss
    /// A stored response was validated with the origin (a 304) and then served.
    case revalidated
    /// A stale stored response was served: `max-stale`, `stale-while-revalidate`,
    /// `stale-if-error` or an offline policy allowed it.
    case stale
    /// The cache was bypassed (unsafe method, `reloadIgnoringLocalCacheData`, no-store request).
    case bypass

    /// The text logs and messages show.
    public var description: String { rawValue }
}

/// The `Cache-Status` field value for one cache (RFC 9211 §2).
///
/// ```
/// Cache-Status: stowage; hit; ttl=42
/// Cache-Status: stowage; fwd=stale; fwd-status=304; stored
/// ```
public struct CacheStatus: Sendable, Hashable, CustomStringConvertible {
    /// The cache's name, the list member's token (`stowage`).
    public var cacheName: String
    /// How the response was served.
    public var outcome: CacheOutcome
    /// The status the origin returned when the cache forwarded the request.
    public var forwardStatus: Int?
    /// The response's remaining freshness in seconds (negative when stale).
    public var timeToLive: Int?
    /// Whether the cache stored the forwarded response.
    public var stored: Bool
    /// Whether the request waited for another request's forward (request collapsing).
    public var collapsed: Bool
    /// Why the forward failed, when it did (`detail`).
    public var detail: String?

    /// Creates a status.
    public init(
        cacheName: String = "stowage",
        outcome: CacheOutcome,
        forwardStatus: Int? = nil,
        timeToLive: Int? = nil,
        stored: Bool = false,
        collapsed: Bool = false,
        detail: String? = nil
    ) {
        self.cacheName = cacheName
        self.outcome = outcome
        self.forwardStatus = forwardStatus
        self.timeToLive = timeToLive
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    /// The field value, parameters as RFC 9211 §2 defines them.
    ///
    /// Written into one string, not joined from parts: it is formed for every hit whose fields
    /// are not kept (an array and `joined` took 1% of the proxy's samples, `perf`, 10^5 URLs).
    public var description: String {
        var text = cacheName
        text.reserveCapacity(cacheName.utf8.count + 48 + (detail?.utf8.count ?? 0))
        switch outcome {
        case .hit: text += "; hit"
        case .stale: text += forwardStatus == nil ? "; hit" : "; fwd=stale"
        case .miss: text += "; fwd=uri-miss"
        case .revalidated: text += "; fwd=stale"
        case .bypass: text += "; fwd=bypass"
        }
        if let forwardStatus {
            text += "; fwd-status="
            text += String(forwardStatus)
        }
        if let timeToLive {
            text += "; ttl="
            text += String(timeToLive)
        }
        if stored { text += "; stored" }
        if collapsed { text += "; collapsed" }
        if let detail {
            text += "; detail=\""
            text += detail
            text += "\""
        }
        return text
    }
}
