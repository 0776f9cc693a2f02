import HTTPTypes
import StowageCore

/// The decisions of RFC 9111, as pure functions of requests, responses and times.
///
/// No I/O and no clock: every function takes `now` (a `Date`), so each requirement
/// is testable on its own (see `Tests/StowageHTTPCacheTests/Conformance`). ``HTTPCache`` applies
/// these rules to stored responses; the client and the proxy apply ``HTTPCache``.
///
/// ```swift
/// let rules = CacheRules(kind: .shared)
/// if rules.storability(of: response, for: request) == .storable { ... }
/// let lifetime = rules.freshnessLifetime(of: stored)      // a Duration
/// let decision = rules.decide(request, stored: stored, now: now)
/// ```
public struct CacheRules: Sendable {
    /// Private (a client's) or shared (a proxy's).
    public var kind: CacheKind
    /// The fraction of the time since `Last-Modified` used as a heuristic lifetime. Default 0.1,
    /// the figure RFC 9111 §4.2.2 mentions and browsers use.
    public var heuristicFraction: Double
    /// Whether responses without explicit freshness get a heuristic lifetime (RFC 9111 §4.2.2)
    /// and are stored for it. Default `true`. `false` follows NSURLCache's rule as the
    /// AFNetworking caching write-up (the "Cache-Control HTTP Header" section) describes it:
    /// a response is stored only when it carries `Cache-Control` `max-age` (or, in a shared
    /// cache, `s-maxage`) or `Expires`; one with neither is not stored, and one stored earlier
    /// without them is stale. Operator lifetimes (``defaultLifetimes``, ``ForcedExpiry``) still count
    /// as explicit.
    public var heuristicFreshness: Bool
    /// The longest heuristic lifetime. Default one day, as Squid's and requests-cache's defaults
    /// bound it.
    public var maximumHeuristicLifetime: Duration {
        didSet { maximumHeuristicSeconds = maximumHeuristicLifetime.timeInterval }
    }
    /// Status codes this cache understands (for `must-understand`, §5.2.2.3) and may store.
    public var understoodStatuses: Set<Int>
    /// RFC 9213 targeted cache-control fields a shared cache follows, in order of precedence,
    /// e.g. `CDN-Cache-Control` (``cdnCacheControl``) or a field of the operator's own. The first
    /// one a response carries with a valid value replaces `Cache-Control` and `Expires` for
    /// this cache. Ignored by a private cache. Default: none.
    public var targetedFields: [HTTPField.Name]
    /// Operator lifetimes by status code for responses whose origin gave no explicit freshness
    /// (no `max-age`, `s-maxage` or valid `Expires`): nginx's `proxy_cache_valid`, e.g.
    /// `[200: .seconds(600), 301: .seconds(600), 404: .seconds(60)]`. They replace the §4.2.2
    /// heuristic for those statuses and make them storable. Default none.
    public var defaultLifetimes: [Int: Duration] {
        didSet { defaultLifetimeSeconds = defaultLifetimes.mapValues(\.timeInterval) }
    }
    /// How long past its freshness a stored response may still be served when the origin fails
    /// (a transport error, a timeout, 500/502/503/504), whatever its directives say — the
    /// operator overrides `must-revalidate` and `no-cache` here (nginx's
    /// `proxy_cache_use_stale error timeout http_5xx`, Varnish's grace). Default `nil`: only
    /// `stale-if-error` (RFC 5861) allows it.
    public var staleIfErrorGrace: Duration? {
        didSet { staleIfErrorGraceSeconds = staleIfErrorGrace?.timeInterval }
    }
    /// How long past its freshness a stored response is served while it is validated in the
    /// background, overriding `must-revalidate`, `proxy-revalidate` and `s-maxage` (nginx's
    /// `proxy_cache_use_stale updating` with `proxy_cache_background_update on`). A `no-cache`
    /// in the request or the stored response still validates first.
    /// Default `nil`: only `stale-while-revalidate` (RFC 5861) allows it.
    public var staleWhileUpdatingGrace: Duration? {
        didSet { staleWhileUpdatingGraceSeconds = staleWhileUpdatingGrace?.timeInterval }
    }
    /// How keys are shaped beyond RFC 9111's normalization (query parameters left out or
    /// sorted). Default: none.
    public var keyRules: CacheKeyRules
    /// What a shared cache does with a response that sets a cookie; ignored by a private cache.
    /// Default ``SetCookieHandling/doNotStore`` (nginx's and Varnish's default).
    public var setCookie: SetCookieHandling

    // The durations above in seconds, kept beside them: freshness and reuse decisions run on
    // every hit and compare seconds, so they read these instead of converting each time.
    private(set) var maximumHeuristicSeconds: Double
    private(set) var defaultLifetimeSeconds: [Int: Double]
    private(set) var staleIfErrorGraceSeconds: Double?
    private(set) var staleWhileUpdatingGraceSeconds: Double?

    /// `CDN-Cache-Control` (RFC 9213 §3), the field targeted at CDNs and other shared caches
    /// operated for the origin.
    public static let cdnCacheControl = HTTPField.Name("CDN-Cache-Control")!

    /// Statuses heuristically cacheable by default (RFC 9110 §15.1), except 206: Stowage does
    /// not combine partial content, and §3.3 lets a cache not store it.
    public static let heuristicallyCacheableStatuses: Set<Int> = [
        200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501,
    ]

    /// Creates the rules of a private or shared cache.
    public init(
        kind: CacheKind,
        heuristicFraction: Double = 0.1,
        maximumHeuristicLifetime: Duration = .seconds(86_400),
        heuristicFreshness: Bool = true,
        understoodStatuses: Set<Int> = CacheRules.heuristicallyCacheableStatuses.union([302, 303, 307]),
        targetedFields: [HTTPField.Name] = [],
        defaultLifetimes: [Int: Duration] = [:],
        staleIfErrorGrace: Duration? = nil,
        staleWhileUpdatingGrace: Duration? = nil,
        keyRules: CacheKeyRules = CacheKeyRules(),
        setCookie: SetCookieHandling = .doNotStore
    ) {
        self.kind = kind
        self.heuristicFraction = heuristicFraction
        self.maximumHeuristicLifetime = maximumHeuristicLifetime
        self.heuristicFreshness = heuristicFreshness
        self.understoodStatuses = understoodStatuses
        self.targetedFields = targetedFields
        self.defaultLifetimes = defaultLifetimes
        self.staleIfErrorGrace = staleIfErrorGrace
        self.staleWhileUpdatingGrace = staleWhileUpdatingGrace
        self.keyRules = keyRules
        self.setCookie = setCookie
        maximumHeuristicSeconds = maximumHeuristicLifetime.timeInterval
        defaultLifetimeSeconds = defaultLifetimes.mapValues(\.timeInterval)
        staleIfErrorGraceSeconds = staleIfErrorGrace?.timeInterval
        staleWhileUpdatingGraceSeconds = staleWhileUpdatingGrace?.timeInterval
    }

    /// The key `request`'s responses are stored under: its normalized target URI, shaped by
    /// ``keyRules``.
    public func key(for request: HTTPRequest) -> CacheKey {
        keyRules.apply(to: CacheKey(request))
    }

    var isShared: Bool { kind == .shared }

    /// Checks the operator's settings: ``heuristicFraction`` finite and ≥ 0, every duration from
    /// 0 to RFC 9111's largest delta-seconds (about 68 years), and ``defaultLifetimes`` keyed by
    /// final statuses (200–599). ``HTTPCache`` calls it when it opens.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` naming the setting and the range it takes.
    public func validate() throws {
        guard heuristicFraction >= 0, heuristicFraction.isFinite else {
            throw StowageError(
                code: .invalidConfiguration,
                message: "rules.heuristicFraction is \(heuristicFraction); give a finite fraction ≥ 0 (default 0.1)"
            )
        }
        try Self.checkDuration(maximumHeuristicLifetime, named: "rules.maximumHeuristicLifetime")
        for (status, lifetime) in defaultLifetimes.sorted(by: { $0.key < $1.key }) {
            guard (200...599).contains(status) else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "rules.defaultLifetimes has the status \(status); give final statuses (200–599)"
                )
            }
            try Self.checkDuration(lifetime, named: "rules.defaultLifetimes[\(status)]")
        }
        if let staleIfErrorGrace { try Self.checkDuration(staleIfErrorGrace, named: "rules.staleIfErrorGrace") }
        if let staleWhileUpdatingGrace {
            try Self.checkDuration(staleWhileUpdatingGrace, named: "rules.staleWhileUpdatingGrace")
        }
    }

    /// Refuses a negative duration or one longer than RFC 9111's largest delta-seconds.
    package static func checkDuration(_ duration: Duration, named name: String) throws {
        guard duration >= .zero, duration <= .seconds(CacheControl.maximumDeltaSeconds) else {
            throw StowageError(
                code: .invalidConfiguration,
                message: "\(name) is \(duration); give a duration from 0 to \(CacheControl.maximumDeltaSeconds) s "
                    + "(RFC 9111's largest delta-seconds, about 68 years)"
            )
        }
    }
}
