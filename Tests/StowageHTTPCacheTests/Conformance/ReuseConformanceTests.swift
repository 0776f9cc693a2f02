import Foundation
import HTTPTypes
import StowageHTTPCache
import Testing

/// RFC 9111 §4 and §5.2: reusing stored responses, request and response directives.
@Suite struct ReuseConformanceTests {
    private let fresh = stored(response(200, [("Cache-Control", "max-age=100")]))

    @Test("§4 nothing stored: forward")
    func nothingStored() {
        #expect(privateRules.decide(request(), stored: nil, now: t0) == .forward)
    }

    @Test("§5.2.1.1 request max-age: a response older than it is not served unvalidated")
    func requestMaxAge() {
        let req = request(.get, "/resource", [("Cache-Control", "max-age=10")])
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 5) == .serve(.hit))
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 11) == .validate)
    }

    @Test("§5.2.1.2 request max-stale: a stale response within the limit is served")
    func maxStale() {
        let req = request(.get, "/resource", [("Cache-Control", "max-stale=50")])
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 140) == .serve(.stale))
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 160) == .validate)
    }

    @Test("§5.2.1.2 max-stale without a value accepts any staleness")
    func maxStaleAny() {
        let req = request(.get, "/resource", [("Cache-Control", "max-stale")])
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 1_000_000) == .serve(.stale))
    }

    @Test("§5.2.1.3 request min-fresh: the response must stay fresh that long")
    func minFresh() {
        let req = request(.get, "/resource", [("Cache-Control", "min-fresh=30")])
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 60) == .serve(.hit))
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 80) == .validate)
    }

    @Test("§5.2.1.4 request no-cache: validate even a fresh response")
    func requestNoCache() {
        let req = request(.get, "/resource", [("Cache-Control", "no-cache")])
        #expect(privateRules.decide(req, stored: fresh, now: t0) == .validate)
    }

    @Test("§5.4 Pragma: no-cache counts as no-cache when the request has no Cache-Control")
    func pragma() {
        #expect(
            privateRules.decide(request(.get, "/resource", [("Pragma", "no-cache")]), stored: fresh, now: t0)
                == .validate
        )
        let both = request(.get, "/resource", [("Pragma", "no-cache"), ("Cache-Control", "max-stale")])
        #expect(privateRules.decide(both, stored: fresh, now: t0) == .serve(.hit))
    }

    @Test("§5.2.1.7 only-if-cached: a miss is unsatisfiable (504)")
    func onlyIfCachedMiss() {
        let req = request(.get, "/resource", [("Cache-Control", "only-if-cached")])
        #expect(privateRules.decide(req, stored: nil, now: t0) == .unsatisfiable)
        #expect(privateRules.decide(req, stored: fresh, now: t0 + 1_000) == .unsatisfiable)
        #expect(privateRules.decide(req, stored: fresh, now: t0) == .serve(.hit))
    }

    @Test("§5.2.2.4 unqualified no-cache in a response: validate before every reuse")
    func responseNoCache() {
        let res = stored(response(200, [("Cache-Control", "no-cache, max-age=100")]))
        #expect(privateRules.decide(request(), stored: res, now: t0) == .validate)
    }

    @Test("§5.2.2.4 qualified no-cache: reuse without validation, minus the named fields")
    func qualifiedNoCache() {
        let res = stored(
            response(200, [("Cache-Control", "no-cache=\"Set-Cookie\", max-age=100"), ("Set-Cookie", "a=b")])
        )
        #expect(privateRules.decide(request(), stored: res, now: t0) == .serve(.hit))
        #expect(privateRules.responseForReuse(res).headerFields[.setCookie] == nil)
    }

    @Test("§5.2.2.2 must-revalidate: a stale response is never served unvalidated, max-stale notwithstanding")
    func mustRevalidate() {
        let res = stored(response(200, [("Cache-Control", "max-age=10, must-revalidate")]))
        let req = request(.get, "/resource", [("Cache-Control", "max-stale")])
        #expect(privateRules.decide(req, stored: res, now: t0 + 20) == .validate)
    }

    @Test("§5.2.2.8 proxy-revalidate binds a shared cache only")
    func proxyRevalidate() {
        let res = stored(response(200, [("Cache-Control", "max-age=10, proxy-revalidate")]))
        let req = request(.get, "/resource", [("Cache-Control", "max-stale")])
        #expect(sharedRules.decide(req, stored: res, now: t0 + 20) == .validate)
        #expect(privateRules.decide(req, stored: res, now: t0 + 20) == .serve(.stale))
    }

    @Test("§5.2.2.10 s-maxage implies proxy-revalidate in a shared cache")
    func sharedMaxAgeRevalidates() {
        let res = stored(response(200, [("Cache-Control", "s-maxage=10")]))
        let req = request(.get, "/resource", [("Cache-Control", "max-stale")])
        #expect(sharedRules.decide(req, stored: res, now: t0 + 20) == .validate)
    }

    @Test("RFC 8246 immutable: a fresh response is not revalidated on a reload (request max-age=0)")
    func immutable() {
        let res = stored(response(200, [("Cache-Control", "max-age=100, immutable")]))
        let reload = request(.get, "/resource", [("Cache-Control", "max-age=0")])
        #expect(privateRules.decide(reload, stored: res, now: t0 + 10) == .serve(.hit))
        #expect(privateRules.decide(reload, stored: fresh, now: t0 + 10) == .validate)
    }

    @Test("RFC 5861 §3 stale-while-revalidate: serve stale within the window and revalidate in the background")
    func staleWhileRevalidate() {
        let res = stored(response(200, [("Cache-Control", "max-age=10, stale-while-revalidate=30")]))
        #expect(privateRules.decide(request(), stored: res, now: t0 + 20) == .serveStaleAndRevalidate)
        #expect(privateRules.decide(request(), stored: res, now: t0 + 50) == .validate)
    }

    @Test("RFC 5861 §4 stale-if-error: a stale response may replace an error within the window")
    func staleIfError() {
        let res = stored(response(200, [("Cache-Control", "max-age=10, stale-if-error=60")]))
        #expect(privateRules.mayServeStaleOnError(res, request: request(), now: t0 + 50))
        #expect(!privateRules.mayServeStaleOnError(res, request: request(), now: t0 + 80))
        let noDirective = stored(response(200, [("Cache-Control", "max-age=10")]))
        #expect(!privateRules.mayServeStaleOnError(noDirective, request: request(), now: t0 + 50))
        let fromRequest = request(.get, "/resource", [("Cache-Control", "stale-if-error=100")])
        #expect(privateRules.mayServeStaleOnError(noDirective, request: fromRequest, now: t0 + 50))
        #expect(CacheRules.isErrorForStaleIfError(.serviceUnavailable))
        #expect(!CacheRules.isErrorForStaleIfError(.notFound))
    }

    @Test("RFC 5861 §4 stale-if-error does not override must-revalidate")
    func staleIfErrorMustRevalidate() {
        let res = stored(response(200, [("Cache-Control", "max-age=10, stale-if-error=60, must-revalidate")]))
        #expect(!privateRules.mayServeStaleOnError(res, request: request(), now: t0 + 50))
    }

    @Test("§4.1 Vary: a stored response is selected only when the named request fields match")
    func varyMatching() {
        let original = request(
            .get,
            "/resource",
            [("Accept-Language", "en"), ("Accept", "text/html,  application/json")]
        )
        let res = stored(response(200, [("Vary", "Accept-Language, Accept")]), for: original)
        #expect(
            privateRules.varyMatches(
                request(.get, "/resource", [("Accept-Language", "en"), ("Accept", "text/html, application/json")]),
                stored: res
            )
        )
        #expect(
            !privateRules.varyMatches(
                request(.get, "/resource", [("Accept-Language", "fr"), ("Accept", "text/html")]),
                stored: res
            )
        )
        #expect(
            !privateRules.varyMatches(
                request(.get, "/resource", [("Accept", "text/html,application/json")]),
                stored: res
            )
        )
    }

    @Test("§4.1 a Vary field absent from both requests matches")
    func varyAbsentMatches() {
        let res = stored(response(200, [("Vary", "X-Absent")]))
        #expect(privateRules.varyMatches(request(), stored: res))
        #expect(!privateRules.varyMatches(request(.get, "/resource", [("X-Absent", "now present")]), stored: res))
    }

    @Test("Forced expiry: fresh until the forced time whatever no-cache and max-age say")
    func forcedExpiry() {
        var res = stored(response(200, [("Cache-Control", "no-cache, max-age=0")]))
        res.forcedExpiry = t0 + 600
        #expect(privateRules.decide(request(), stored: res, now: t0 + 599) == .serve(.hit))
        #expect(privateRules.decide(request(), stored: res, now: t0 + 601) == .validate)
    }
}
