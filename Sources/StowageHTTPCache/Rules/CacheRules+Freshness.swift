import Foundation
import HTTPTypes
import StowageCore

extension CacheRules {
    /// RFC 9111 §4.2.1: how long `stored` is fresh after its origin generated it.
    ///
    /// In order: a forced expiry; `s-maxage` in a shared cache; `max-age`; `Expires` minus `Date`;
    /// a heuristic (§4.2.2) for heuristically cacheable statuses (or `public`) with a
    /// `Last-Modified`; otherwise 0. Invalid or conflicting values give 0 (stale).
    public func freshnessLifetime(of stored: StoredResponse) -> Duration {
        .timeInterval(freshnessSeconds(of: stored))
    }

    /// ``freshnessLifetime(of:)`` in seconds: what the hit path compares.
    func freshnessSeconds(of stored: StoredResponse) -> Double {
        if let forced = stored.forcedExpirySeconds {
            return max(0, forced - stored.responseSeconds) + correctedInitialAgeSeconds(of: stored)
        }
        let directives = directives(of: stored)
        let cc = directives.cacheControl
        // Each directive is looked up once: a lookup scans and parses the directives again.
        if isShared, case let sharedMaxAge = cc.sharedMaxAge, sharedMaxAge.isPresent {
            return Double(sharedMaxAge.value ?? 0)
        }
        // §5.3: with max-age present, Expires is ignored — even when max-age is invalid.
        if case let maxAge = cc.maxAge, maxAge.isPresent { return Double(maxAge.value ?? 0) }
        let dateValue = stored.facts.date ?? Int64(stored.responseSeconds)
        switch directives.followsExpires ? stored.facts.expires : .absent {
        case .date(let expires): return Double(max(0, expires - dateValue))
        case .invalid: return 0  // §5.3: invalid dates, "0" included, are in the past.
        case .absent: break
        }
        if let lifetime = defaultLifetimeSeconds[stored.response.status.code] { return lifetime }
        return heuristicLifetime(of: stored, dateValue: dateValue)
    }

    /// §4.2.2: a fraction of the time since `Last-Modified`, capped; 0 when not allowed, and
    /// always 0 without ``heuristicFreshness``.
    func heuristicLifetime(of stored: StoredResponse, dateValue: Int64) -> Double {
        guard heuristicFreshness else { return 0 }
        let status = stored.response.status.code
        let cc = directives(of: stored).cacheControl
        guard Self.heuristicallyCacheableStatuses.contains(status) || cc.isPublic,
            let lastModified = stored.lastModified, lastModified < dateValue
        else { return 0 }
        return min(Double(dateValue - lastModified) * heuristicFraction, maximumHeuristicSeconds)
    }

    /// Whether the lifetime of `stored` comes from the heuristic (no explicit freshness).
    public func usesHeuristicFreshness(_ stored: StoredResponse) -> Bool {
        let directives = directives(of: stored)
        let cc = directives.cacheControl
        return stored.forcedExpirySeconds == nil && !(isShared && cc.sharedMaxAge.isPresent) && !cc.maxAge.isPresent
            && (!directives.followsExpires || stored.facts.expires == .absent)
            && defaultLifetimeSeconds[stored.response.status.code] == nil
    }

    // MARK: Age (§4.2.3)

    /// `corrected_initial_age`: the age the response had when it arrived.
    public func correctedInitialAge(of stored: StoredResponse) -> Duration {
        .timeInterval(correctedInitialAgeSeconds(of: stored))
    }

    func correctedInitialAgeSeconds(of stored: StoredResponse) -> Double {
        let dateValue = Double(stored.facts.date ?? Int64(stored.responseSeconds))
        let apparentAge = max(0, stored.responseSeconds - dateValue)
        let responseDelay = max(0, stored.responseSeconds - stored.requestSeconds)
        let correctedAgeValue = Double(stored.facts.ageValue) + responseDelay
        return max(apparentAge, correctedAgeValue)
    }

    /// `current_age` at `now`: the corrected initial age plus the time spent in this cache.
    public func currentAge(of stored: StoredResponse, now: Date) -> Duration {
        .timeInterval(currentAgeSeconds(of: stored, now: now.timeIntervalSince1970))
    }

    /// ``currentAge(of:now:)`` with `now` and the result in seconds.
    func currentAgeSeconds(of stored: StoredResponse, now: Double) -> Double {
        correctedInitialAgeSeconds(of: stored) + max(0, now - stored.responseSeconds)
    }

    /// The `Age` field's value (§5.1): the first member of a list; an invalid value is ignored (0).
    static func ageValue(_ fields: HTTPFields) -> Int {
        guard let first = fields[values: .age].first else { return 0 }
        let member = first.split(separator: ",", omittingEmptySubsequences: false).first ?? ""
        return CacheControl.parseDeltaSeconds(String(member.trimmingWhitespace())).value ?? 0
    }

    /// Remaining freshness at `now`: lifetime minus current age (negative when stale).
    public func timeToLive(of stored: StoredResponse, now: Date) -> Duration {
        .timeInterval(timeToLiveSeconds(of: stored, now: now.timeIntervalSince1970))
    }

    /// ``timeToLive(of:now:)`` with `now` and the result in seconds.
    func timeToLiveSeconds(of stored: StoredResponse, now: Double) -> Double {
        freshnessSeconds(of: stored) - currentAgeSeconds(of: stored, now: now)
    }
}
