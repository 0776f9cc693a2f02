import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore

extension HTTPCache {
    /// Fetches `request` from the origin and stores the response when allowed. With `collapse`,
    /// concurrent callers for the same key wait for one fetch and then read the stored response.
    func forward(
        _ request: HTTPRequest,
        key: CacheKey,
        outcome: CacheOutcome,
        collapse: Bool,
        fetch: @escaping HTTPFetch
    ) async throws -> CachedResponse {
        let collapseKey = key.uri
        var flight: RequestCollapser.Flight?
        // A disabled cache stores nothing a waiting request could be served: each one fetches.
        // Nor may a URL whose last response could not be stored (Varnish's hit-for-miss).
        let marked = collapse && uncacheableURLs.contains(collapseKey, now: now)
        if collapse, !marked, mode != .disabled, configuration.collapsesRequests, request.method == .get,
            !CacheRules.isConditional(request)
        {
            // A flight an invalidation of this URL overtook is not joined: what it fetched is
            // what the invalidation removed (InvalidationOrder).
            let role = collapser.join(collapseKey, startedAt: invalidations.current) { [invalidations] startedAt in
                invalidations.isCovered(uri: collapseKey, tags: nil, since: startedAt)
            }
            switch role {
            case .follower(let joined):
                let stored = await collapser.wait(for: joined, timeout: configuration.collapseTimeout)
                if stored, var served = try await storedHit(for: request, key: key) {
                    served.status.collapsed = true
                    served.trace.append("collapsed: waited for another request's fetch and served what it stored")
                    return served
                }
                var alone = try await forward(request, key: key, outcome: outcome, collapse: false, fetch: fetch)
                alone.trace.insert(
                    "collapsed: the other request stored nothing usable (or timed out): fetched alone",
                    at: 0
                )
                return alone
            case .leader(let led):
                // A leader that looked the key up just before the previous leader stored and
                // finished must not fetch again: look once more, now that no one else can lead.
                let served: CachedResponse?
                do {
                    served = try await storedHit(for: request, key: key)
                } catch {
                    collapser.finish(led, stored: false)
                    throw error
                }
                if var served {
                    collapser.finish(led, stored: true)
                    served.trace.append("stored by a concurrent request after this one's lookup: served from the cache")
                    return served
                }
                flight = led
            }
        }
        let finish: @Sendable (Bool) -> Void = { [collapser, flight] stored in
            if let flight { collapser.finish(flight, stored: stored) }
        }
        let exchanged: OriginExchange
        do {
            exchanged = try await exchange(request, through: fetch)
        } catch {
            finish(false)
            throw error
        }
        let response = exchanged.response
        let store: StoreOutcome
        do {
            store = try await storeIfAllowedTraced(exchanged, for: request, key: key, onDone: finish)
        } catch {
            finish(false)
            throw error
        }
        if !store.isUnderWay { finish(false) }
        if store.isUncacheable {
            uncacheableURLs.mark(collapseKey, now: now)
        } else if marked, store.isUnderWay {
            uncacheableURLs.forget(collapseKey)
        }
        var served = CachedResponse(
            response: response,
            body: store.body,
            status: status(outcome, after: store, response)
        )
        served.userInfo = store.userInfo
        served.trace = ["fetched from the origin: \(response.status.code)", store.note]
        if marked {
            served.trace.insert(
                "not collapsed: this URL's last response could not be stored (hit-for-miss, as Varnish's)",
                at: 0
            )
        }
        return served
    }

    /// The stored response for `request` if one may be served now without the origin: what a
    /// concurrent request for the same key fetched and stored.
    private func storedHit(for request: HTTPRequest, key: CacheKey) async throws -> CachedResponse? {
        let now = self.now
        guard let record = selectVariant(request, in: try await variants(for: key)),
            case .serve = rules.decide(request, stored: record.stored, now: now)
        else { return nil }
        return try await serve(record, to: request, now: now, outcome: .hit)
    }

    /// Unsafe methods: forwarded as they are, then §4.4 invalidation.
    func forwardUnsafe(
        _ request: HTTPRequest,
        body: HTTPBody?,
        fetch: @escaping HTTPFetch
    ) async throws -> CachedResponse {
        let (response, responseBody) = try await fetchTraced(request, body: body, through: fetch)
        try await invalidate(after: request, response: response)
        var served = CachedResponse(
            response: response,
            body: responseBody,
            status: status(.bypass, forwardStatus: response.status.code, detail: "method")
        )
        served.trace = [
            "fetched from the origin: \(response.status.code); not stored (§3 only GET responses are stored)"
        ]
        return served
    }

    /// The `Cache-Status` of a response fetched from the origin, after `store` decided about it.
    func status(_ outcome: CacheOutcome, after store: StoreOutcome, _ response: HTTPResponse) -> CacheStatus {
        status(
            outcome,
            forwardStatus: response.status.code,
            stored: store.isCommitted,
            detail: store.cacheStatusDetail
        )
    }

    /// Bodies up to this size with a known length are read whole before the response is
    /// answered, so `Cache-Status` says `stored` only when the store committed, and a body the
    /// origin cuts short is an error instead of half a response (nginx buffers responses too).
    static let wholeBodyReadLimit: Int64 = 256 * 1024
}
