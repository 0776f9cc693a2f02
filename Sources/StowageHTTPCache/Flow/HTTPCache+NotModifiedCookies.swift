import Foundation
import HTTPTypes

extension HTTPCache {
    /// The `Set-Cookie` (and `Set-Cookie2`) fields of a 304: they answer the client whose request
    /// was validated, as a 200's answer the client of the miss (RFC 6265 §3: a cookie is set by
    /// the response that carries it). A shared cache that does not replay cookies
    /// (``SetCookieHandling``) never stores them, so it delivers them here, to that client alone.
    func cookiesForThisClient(of notModified: HTTPResponse) -> [HTTPField] {
        notModified.headerFields.filter { SetCookieHandling.fieldNames.contains($0.name.canonicalName) }
    }

    /// A 304 that sets a cookie, in a shared cache that stores no response setting one
    /// (``SetCookieHandling/doNotStore``, the default): what Varnish's built-in VCL does — the 304
    /// is merged into the stored response for this delivery only (RFC 9111 §4.3.4's update), the
    /// client gets it with its cookie, and the merged response is not stored, so nothing freshens
    /// the stored one for the next client, who validates again and gets a cookie of its own.
    ///
    /// - Returns: The answer, or `nil` when this is not that case (or the stored body is gone,
    ///   which the caller's own path handles).
    func answerNotModifiedSettingCookie(
        _ exchanged: OriginExchange,
        record: VariantRecord,
        request: HTTPRequest
    ) async throws -> CachedResponse? {
        let response = exchanged.response
        guard rules.isShared, rules.setCookie == .doNotStore else { return nil }
        let cookies = cookiesForThisClient(of: response)
        guard !cookies.isEmpty else { return nil }
        var merged = record
        merged.stored = rules.freshen(
            record.stored,
            with: response,
            requestTime: exchanged.requestTime,
            responseTime: exchanged.responseTime
        )
        guard var served = try await serve(merged, to: request, now: exchanged.responseTime, outcome: .revalidated)
        else { return nil }
        served.response.headerFields.append(contentsOf: cookies)
        served.status.forwardStatus = 304
        served.trace.append(
            "§4.3.4 the origin answered 304 with Set-Cookie: merged into the stored response for this client only "
                + "and served with its cookie; nothing was freshened (setCookie: doNotStore)"
        )
        return served
    }

    /// Gives the client of a validation the 304's cookies, which the served response lacks where
    /// the cache did not store them (a shared cache other than ``SetCookieHandling/store``) or
    /// where nothing was freshened (`replacing` the stored response's own cookies then, which
    /// were another client's answer).
    func deliverCookies(of notModified: HTTPResponse, in served: inout CachedResponse, replacing: Bool) {
        let cookies = cookiesForThisClient(of: notModified)
        guard !cookies.isEmpty else { return }
        if replacing {
            served.response.headerFields.removeAll { SetCookieHandling.fieldNames.contains($0.name.canonicalName) }
        } else if !rules.isShared || rules.setCookie == .store {
            return  // Stored with the freshened response, and served from it.
        }
        served.response.headerFields.append(contentsOf: cookies)
    }
}
