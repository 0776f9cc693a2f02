import Foundation
import HTTPTypes

extension CacheRules {
    /// What to do with a request, given the stored response that matches it (RFC 9111 §4).
    public enum Decision: Sendable, Hashable {
        /// Serve the stored response without contacting the origin; ``CacheOutcome/hit`` when
        /// fresh, ``CacheOutcome/stale`` when the request's `max-stale` allowed it.
        case serve(CacheOutcome)
        /// Serve the stale stored response now and validate it in the background
        /// (`stale-while-revalidate`, RFC 5861 §3).
        case serveStaleAndRevalidate
        /// Send a conditional request built by ``conditionalRequest(for:validating:)`` (§4.3.1).
        case validate
        /// Nothing usable is stored: forward the request (RFC 9111 §4 "a cache … MUST forward").
        case forward
        /// `only-if-cached` and nothing can be served: answer 504 (§5.2.1.7).
        case unsatisfiable
    }

    /// RFC 9111 §4: how to answer `request` given `stored`, the variant that matched its
    /// `Vary` (or `nil`), at `now`.
    public func decide(_ request: HTTPRequest, stored: StoredResponse?, now: Date) -> Decision {
        var ignored: [TraceNote] = []
        return decide(request, stored: stored, now: now.timeIntervalSince1970, noting: &ignored)
    }

    /// ``decide(_:stored:now:)`` with `now` in seconds since 1970, as the cache's clock gives it.
    func decide(_ request: HTTPRequest, stored: StoredResponse?, now: Double) -> Decision {
        var ignored: [TraceNote] = []
        return decide(request, stored: stored, now: now, noting: &ignored)
    }

    /// ``decide(_:stored:now:)``, appending to `trace` why: the freshness figures, their source
    /// and the directive (with its section) that settled the decision.
    public func decide(
        _ request: HTTPRequest,
        stored: StoredResponse?,
        now: Date,
        explaining trace: inout [String]
    ) -> Decision {
        var notes: [TraceNote] = []
        let decision = decide(request, stored: stored, now: now.timeIntervalSince1970, noting: &notes)
        trace += notes.texts
        return decision
    }

    /// ``decide(_:stored:now:explaining:)`` with the steps kept as ``TraceNote``s, written out
    /// only when read.
    func decide(
        _ request: HTTPRequest,
        stored: StoredResponse?,
        now: Double,
        noting trace: inout [TraceNote]
    ) -> Decision {
        let requestCC = request.headerFields.cacheControl
        guard let stored else {
            if requestCC.onlyIfCached { trace.append("§5.2.1.7 only-if-cached and nothing stored: 504") }
            return requestCC.onlyIfCached ? .unsatisfiable : .forward
        }
        let decision = decideWithStored(request, requestCC: requestCC, stored: stored, now: now, trace: &trace)
        switch decision {
        case .validate, .forward:
            // §5.2.1.7: only-if-cached answers 504 rather than contacting the origin.
            if requestCC.onlyIfCached { trace.append("§5.2.1.7 only-if-cached forbids contacting the origin: 504") }
            return requestCC.onlyIfCached ? .unsatisfiable : decision
        default:
            return decision
        }
    }

    private func decideWithStored(
        _ request: HTTPRequest,
        requestCC: CacheControl,
        stored: StoredResponse,
        now: Double,
        trace: inout [TraceNote]
    ) -> Decision {
        let responseCC = directives(of: stored).cacheControl
        let forced = stored.forcedExpirySeconds != nil
        let age = currentAgeSeconds(of: stored, now: now)
        let lifetime = freshnessSeconds(of: stored)
        let ttl = lifetime - age
        let isFresh = ttl > 0
        trace.append(
            .freshness(
                age: Int(age),
                lifetime: Int(lifetime),
                source: lifetimeSource(of: stored),
                isFresh: isFresh,
                remaining: isFresh ? Int(ttl) : Int(-ttl)
            )
        )
        // RFC 8246: an immutable response is not revalidated during its freshness on a reload.
        let immutable = isFresh && responseCC.immutable
        // §5.2.1.4 request no-cache; §5.4 Pragma: no-cache counts only without Cache-Control.
        if requestCC.noCache || Self.hasPragmaNoCache(request.headerFields), !immutable {
            trace.append("§5.2.1.4 the request has no-cache (or §5.4 Pragma: no-cache): validate")
            return .validate
        }
        // §5.2.2.4: an unqualified no-cache response must be validated before every reuse.
        if responseCC.isUnqualifiedNoCache, !forced {
            trace.append("§5.2.2.4 the stored response has no-cache: validate before every reuse")
            return .validate
        }
        if isFresh {
            // §5.2.1.1: the client will not accept a response older than max-age.
            if !immutable, requestCC.maxAge.isPresent, Double(requestCC.maxAge.value ?? 0) < age {
                trace.append("§5.2.1.1 the request's max-age=\(requestCC.maxAge.value ?? 0) is below the age: validate")
                return .validate
            }
            // §5.2.1.3: it wants the response to stay fresh for at least min-fresh.
            if requestCC.minFresh.isPresent, Double(requestCC.minFresh.value ?? 0) > ttl {
                trace.append(
                    "§5.2.1.3 the request's min-fresh=\(requestCC.minFresh.value ?? 0) exceeds the time left: validate"
                )
                return .validate
            }
            trace.append("§4.2 fresh: served from the cache")
            return .serve(.hit)
        }
        let staleness = -ttl
        if let grace = staleWhileUpdatingGraceSeconds, staleness <= grace {
            trace.append(
                "the operator's stale-while-updating grace of \(Int(grace)) s: served stale, validated in the background"
            )
            return .serveStaleAndRevalidate
        }
        // §4.2.4 / §5.2.2.2: must-revalidate (and, in a shared cache, proxy-revalidate or
        // s-maxage, §5.2.2.8 and §5.2.2.10) forbids serving stale without validation.
        if !requiresRevalidationWhenStale(responseCC) {
            if let maxStale = requestCC.maxStale {
                switch maxStale {
                case .any:
                    trace.append("§5.2.1.2 the request's max-stale accepts any staleness: served stale")
                    return .serve(.stale)
                case .seconds(let seconds) where staleness <= Double(seconds):
                    trace.append("§5.2.1.2 the request's max-stale=\(seconds) covers the staleness: served stale")
                    return .serve(.stale)
                default: break
                }
            }
            if let window = responseCC.staleWhileRevalidate.value, staleness <= Double(window) {
                trace.append("RFC 5861 §3 stale-while-revalidate=\(window): served stale, validated in the background")
                return .serveStaleAndRevalidate
            }
        } else {
            trace.append(
                "§4.2.4 must-revalidate (or proxy-revalidate / s-maxage in a shared cache) forbids serving it stale"
            )
        }
        trace.append("§4.3 stale: validate with the origin")
        return .validate
    }

    /// Where the freshness lifetime of `stored` comes from, for traces.
    func lifetimeSource(of stored: StoredResponse) -> LifetimeSource {
        let directives = directives(of: stored)
        let cc = directives.cacheControl
        if stored.forcedExpirySeconds != nil { return .forcedExpiry }
        if isShared, cc.sharedMaxAge.isPresent { return .sharedMaxAge(directives.targetedField) }
        if cc.maxAge.isPresent { return .maxAge(directives.targetedField) }
        switch directives.followsExpires ? stored.facts.expires : .absent {
        case .date: return .expires
        case .invalid: return .invalidExpires
        case .absent: break
        }
        if defaultLifetimeSeconds[stored.response.status.code] != nil {
            return .operatorLifetime(status: stored.response.status.code)
        }
        return heuristicLifetime(of: stored, dateValue: stored.facts.date ?? Int64(stored.responseSeconds)) > 0
            ? .heuristic : .nothing
    }

    /// Whether `must-revalidate`, or for a shared cache `proxy-revalidate` or `s-maxage`, forbids
    /// serving the response stale.
    func requiresRevalidationWhenStale(_ cc: CacheControl) -> Bool {
        cc.mustRevalidate || (isShared && (cc.proxyRevalidate || cc.sharedMaxAge.isPresent))
    }

    /// RFC 5861 §4: whether `stored` may be served stale because the origin failed (an error
    /// status 500, 502, 503 or 504, or no response at all).
    public func mayServeStaleOnError(_ stored: StoredResponse, request: HTTPRequest, now: Date) -> Bool {
        mayServeStaleOnError(stored, request: request, now: now.timeIntervalSince1970)
    }

    /// ``mayServeStaleOnError(_:request:now:)`` with `now` in seconds since 1970.
    func mayServeStaleOnError(_ stored: StoredResponse, request: HTTPRequest, now: Double) -> Bool {
        let responseCC = directives(of: stored).cacheControl
        let requestCC = request.headerFields.cacheControl
        if let grace = staleIfErrorGraceSeconds, -timeToLiveSeconds(of: stored, now: now) <= grace { return true }
        guard !requiresRevalidationWhenStale(responseCC),
            !responseCC.isUnqualifiedNoCache || stored.forcedExpirySeconds != nil
        else { return false }
        let staleness = -timeToLiveSeconds(of: stored, now: now)
        if staleness <= 0 { return true }
        let window = max(responseCC.staleIfError.value ?? -1, requestCC.staleIfError.value ?? -1)
        return window >= 0 && staleness <= Double(window)
    }

    /// Whether a status from the origin counts as an error for `stale-if-error` (RFC 5861 §4).
    public static func isErrorForStaleIfError(_ status: HTTPResponse.Status) -> Bool {
        [500, 502, 503, 504].contains(status.code)
    }

    /// §5.4: `Pragma: no-cache` in a request without `Cache-Control`.
    static func hasPragmaNoCache(_ fields: HTTPFields) -> Bool {
        guard fields[.cacheControl] == nil else { return false }
        return fields[values: .pragma].contains { value in
            value.split(separator: ",").contains { $0.trimmingWhitespace().lowercased() == "no-cache" }
        }
    }

    // MARK: Vary (§4.1)

    /// The request fields `response`'s `Vary` names, and the key's header fields
    /// (``CacheKeyRules/headers``), with `request`'s values, for storing.
    public func varyingFields(of response: HTTPResponse, request: HTTPRequest) -> [StoredResponse.VaryingField] {
        var names: [String] = []
        for value in response.headerFields[values: .vary] {
            for name in value.split(separator: ",") {
                let name = name.trimmingWhitespace().lowercased()
                if !name.isEmpty, !names.contains(name) { names.append(name) }
            }
        }
        for field in keyRules.headers where !names.contains(field.canonicalName) {
            names.append(field.canonicalName)
        }
        return names.map {
            StoredResponse.VaryingField(name: $0, value: Self.normalizedValue(of: $0, in: request.headerFields))
        }
    }

    /// §4.1: whether `request` selects `stored` — every field its `Vary` named has the same
    /// (normalized) value, absent matching absent.
    public func varyMatches(_ request: HTTPRequest, stored: StoredResponse) -> Bool {
        varyMatches(request, varyingFields: stored.varyingFields)
    }

    /// ``varyMatches(_:stored:)`` given the stored response's varying fields alone, so that a
    /// lookup need not copy each stored response it looks at.
    func varyMatches(_ request: HTTPRequest, varyingFields: [StoredResponse.VaryingField]) -> Bool {
        varyingFields.allSatisfy { $0.value == Self.normalizedValue(of: $0.name, in: request.headerFields) }
    }

    /// Field lines combined with `, `, whitespace around list commas removed (§4.1 allows
    /// normalizing by the field's syntax).
    static func normalizedValue(of name: String, in fields: HTTPFields) -> String? {
        guard let fieldName = HTTPField.Name(name) else { return nil }
        let values = fields[values: fieldName]
        guard !values.isEmpty else { return nil }
        return values.flatMap { $0.split(separator: ",").map { String($0.trimmingWhitespace()) } }.joined(
            separator: ","
        )
    }
}
