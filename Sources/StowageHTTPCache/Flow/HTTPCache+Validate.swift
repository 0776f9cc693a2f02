import Foundation
import HTTPTypes
import Logging
import StowageCache

extension HTTPCache {
    /// §4.3: validates `record` with a conditional request; serves it refreshed on a 304, the new
    /// response otherwise, or the stale one when the origin fails and `stale-if-error` allows it.
    func validate(
        _ request: HTTPRequest,
        record: VariantRecord,
        key: CacheKey,
        fetch: @escaping HTTPFetch
    ) async throws
        -> CachedResponse
    {
        let conditional = rules.conditionalRequest(for: request, validating: [record.stored])
        let exchanged: OriginExchange
        do {
            exchanged = try await exchange(conditional, through: fetch)
        } catch {
            if rules.mayServeStaleOnError(record.stored, request: request, now: now),
                var served = try await serve(record, to: request, now: now, outcome: .stale)
            {
                served.status.detail = "stale-if-error: \(error)"
                served.trace.append("RFC 5861 §4 the origin failed (\(error)): served stale (stale-if-error)")
                return served
            }
            throw error
        }
        let (response, responseTime) = (exchanged.response, exchanged.responseTime)
        if response.status.code == 304 {
            // A 304 that sets a cookie in a shared cache that stores none: delivered, not stored.
            if let served = try await answerNotModifiedSettingCookie(exchanged, record: record, request: request) {
                return served
            }
            // A 304 to a request sent before an invalidation of the key freshens nothing: what
            // it validated is gone, and what replaced it was not what it answered.
            levels.followStoreChanges()  // another handle's removal is an invalidation
            let refreshed =
                try await invalidations.commit(
                    uri: key.uri,
                    tags: tags(in: record.stored.response.headerFields),
                    startedAt: exchanged.startedAt
                ) {
                    try await freshenVariants(
                        for: key,
                        with: response,
                        requestTime: exchanged.requestTime,
                        responseTime: responseTime
                    )
                } ?? []
            let chosen = refreshed.first { $0.bodyKey == record.bodyKey } ?? refreshed.first
            if let chosen, var served = try await serve(chosen, to: request, now: responseTime, outcome: .revalidated) {
                served.status.forwardStatus = 304
                deliverCookies(of: response, in: &served, replacing: false)
                served.trace.append("§4.3.4 the origin answered 304: the stored response was freshened and served")
                return served
            }
            // §4.3.4: the 304's validators select none of the stored responses (say its strong
            // ETag differs from the one the cache sent), so none may be updated. The 304 still
            // answers the conditional request, which nominated `record` alone: "the stored
            // response can be ... reused" (§4.3.3), the origin "redirecting the client to make use
            // of that stored representation" (RFC 9110 §15.4.5). So `record` answers this request
            // as it is stored, unchanged and still stale; asking the origin again would send the
            // same request twice for one client request.
            if var served = try await serve(record, to: request, now: responseTime, outcome: .revalidated) {
                served.status.forwardStatus = 304
                deliverCookies(of: response, in: &served, replacing: true)
                served.trace.append(
                    "§4.3.4 the origin answered 304 with validators matching nothing stored: nothing was freshened; "
                        + "§4.3.3 the stored response the request nominated was served as stored"
                )
                return served
            }
            // Its body is gone: fetch the full response.
            var unconditional = request
            unconditional.headerFields[.ifNoneMatch] = nil
            unconditional.headerFields[.ifModifiedSince] = nil
            var fetched = try await forward(unconditional, key: key, outcome: .miss, collapse: false, fetch: fetch)
            fetched.trace.insert("§4.3.3 the 304 matched nothing stored and its body is gone: fetched in full", at: 0)
            return fetched
        }
        if CacheRules.isErrorForStaleIfError(response.status),
            rules.mayServeStaleOnError(record.stored, request: request, now: responseTime),
            var served = try await serve(record, to: request, now: responseTime, outcome: .stale)
        {
            served.status.forwardStatus = response.status.code
            served.status.detail = "stale-if-error"
            served.trace.append(
                "RFC 5861 §4 the origin answered \(response.status.code): served stale (stale-if-error)"
            )
            return served
        }
        let store = try await storeIfAllowedTraced(exchanged, for: request, key: key, onDone: { _ in })
        var served = CachedResponse(response: response, body: store.body, status: status(.miss, after: store, response))
        served.userInfo = store.userInfo
        served.trace = [
            "§4.3.3 validation answered \(response.status.code): the new response replaces the stored one", store.note,
        ]
        return served
    }

    /// RFC 5861 §3: validates in the background, once per key at a time; the caller already has
    /// the stale response.
    func revalidateInBackground(
        _ request: HTTPRequest,
        record: VariantRecord,
        key: CacheKey,
        fetch: @escaping HTTPFetch
    ) {
        guard case .leader(let flight) = revalidations.join(key.uri, startedAt: 0) else { return }
        var backgroundRequest = request
        backgroundRequest.method = .get
        Task {
            defer { revalidations.finish(flight, stored: true) }
            do {
                let served = try await validate(backgroundRequest, record: record, key: key, fetch: fetch)
                for try await _ in served.body {}  // drain so a new response is stored
            } catch {
                configuration.logger.debug("background revalidation failed: \(error)", metadata: ["uri": "\(key.uri)"])
            }
        }
    }
}
