import Foundation

/// The directives of RFC 9111 §5.2 (and RFC 5861, RFC 8246) by name.
extension CacheControl {
    // MARK: Both directions

    /// `max-age` (§5.2.1.1 request, §5.2.2.1 response).
    public var maxAge: DeltaSeconds { delta("max-age") }
    /// `no-cache` is present, with or without field names (§5.2.1.4, §5.2.2.4).
    public var noCache: Bool { has("no-cache") }
    /// `no-store` (§5.2.1.5, §5.2.2.5).
    public var noStore: Bool { has("no-store") }
    /// `no-transform` (§5.2.1.6, §5.2.2.6).
    public var noTransform: Bool { has("no-transform") }

    // MARK: Request

    /// `max-stale` (§5.2.1.2): `nil` when absent; ``MaxStale/any`` without an argument.
    public var maxStale: MaxStale? {
        guard has("max-stale") else { return nil }
        let hasArgument = directives.contains { $0.name == "max-stale" && $0.argument != nil }
        guard hasArgument else { return .any }
        // An unusable argument allows no staleness: the cautious reading.
        return .seconds(delta("max-stale").value ?? 0)
    }
    /// `min-fresh` (§5.2.1.3).
    public var minFresh: DeltaSeconds { delta("min-fresh") }
    /// `only-if-cached` (§5.2.1.7).
    public var onlyIfCached: Bool { has("only-if-cached") }

    /// How stale a response the client accepts (`max-stale`).
    public enum MaxStale: Sendable, Hashable {
        /// `max-stale` without an argument: any staleness.
        case any
        /// At most this many seconds stale.
        case seconds(Int)
    }

    // MARK: Response

    /// The field names of a qualified `no-cache="…"` (§5.2.2.4); `[]` for a plain `no-cache`,
    /// `nil` when absent.
    public var noCacheFields: [String]? { fieldNames("no-cache") }
    /// An unqualified `no-cache`: every reuse needs validation.
    public var isUnqualifiedNoCache: Bool {
        directives.contains {
            $0.name == "no-cache" && ($0.argument ?? "").trimmingCharacters(in: .whitespaces).isEmpty
        }
    }
    /// `private`, with or without field names (§5.2.2.7).
    public var isPrivate: Bool { has("private") }
    /// An unqualified `private`: a shared cache must not store the response.
    public var isUnqualifiedPrivate: Bool {
        directives.contains { $0.name == "private" && ($0.argument ?? "").trimmingCharacters(in: .whitespaces).isEmpty }
    }
    /// The field names of a qualified `private="…"`; a shared cache must not store them.
    public var privateFields: [String]? { fieldNames("private") }
    /// `public` (§5.2.2.9).
    public var isPublic: Bool { has("public") }
    /// `must-revalidate` (§5.2.2.2).
    public var mustRevalidate: Bool { has("must-revalidate") }
    /// `proxy-revalidate` (§5.2.2.8).
    public var proxyRevalidate: Bool { has("proxy-revalidate") }
    /// `must-understand` (§5.2.2.3).
    public var mustUnderstand: Bool { has("must-understand") }
    /// `s-maxage` (§5.2.2.10).
    public var sharedMaxAge: DeltaSeconds { delta("s-maxage") }
    /// `immutable` (RFC 8246).
    public var immutable: Bool { has("immutable") }
    /// `stale-while-revalidate` (RFC 5861 §3).
    public var staleWhileRevalidate: DeltaSeconds { delta("stale-while-revalidate") }
    /// `stale-if-error` (RFC 5861 §4), in a response or a request.
    public var staleIfError: DeltaSeconds { delta("stale-if-error") }
}
