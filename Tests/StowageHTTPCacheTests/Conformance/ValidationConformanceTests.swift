import Foundation
import HTTPTypes
import StowageHTTPCache
import Testing

/// RFC 9111 §4.3 validation and §4.4 invalidation.
@Suite struct ValidationConformanceTests {
    @Test("§4.3.1 the conditional request carries the stored entity tag in If-None-Match")
    func ifNoneMatch() {
        let res = stored(response(200, [("ETag", "\"v1\"")]))
        let conditional = privateRules.conditionalRequest(for: request(), validating: [res])
        #expect(conditional.headerFields[.ifNoneMatch] == "\"v1\"")
    }

    @Test("§4.3.1 the conditional request carries Last-Modified in If-Modified-Since")
    func ifModifiedSince() {
        let lastModified = httpDate(t0 - 500)
        let res = stored(response(200, [("Last-Modified", lastModified)]))
        let conditional = privateRules.conditionalRequest(for: request(), validating: [res])
        #expect(conditional.headerFields[.ifModifiedSince] == lastModified)
        #expect(conditional.headerFields[.ifNoneMatch] == nil)
    }

    @Test("§4.3.1 several stored variants: all their entity tags, no If-Modified-Since")
    func severalVariants() {
        let a = stored(response(200, [("ETag", "\"a\""), ("Last-Modified", httpDate(t0 - 5))]))
        let b = stored(response(200, [("ETag", "W/\"b\"")]))
        let conditional = privateRules.conditionalRequest(for: request(), validating: [a, b])
        #expect(conditional.headerFields[.ifNoneMatch] == "\"a\", W/\"b\"")
        #expect(conditional.headerFields[.ifModifiedSince] == nil)
    }

    @Test("§4.3.2 a client's If-None-Match is answered from the stored response (weak comparison)")
    func clientIfNoneMatch() {
        let res = stored(response(200, [("ETag", "W/\"v1\"")]))
        #expect(
            privateRules.conditionsMatch(request(.get, "/resource", [("If-None-Match", "\"x\", \"v1\"")]), stored: res)
        )
        #expect(!privateRules.conditionsMatch(request(.get, "/resource", [("If-None-Match", "\"v2\"")]), stored: res))
        #expect(privateRules.conditionsMatch(request(.get, "/resource", [("If-None-Match", "*")]), stored: res))
    }

    @Test("§4.3.2 If-Modified-Since is evaluated only without If-None-Match")
    func clientIfModifiedSince() {
        let res = stored(response(200, [("ETag", "\"v1\""), ("Last-Modified", httpDate(t0 - 100))]))
        #expect(
            privateRules.conditionsMatch(
                request(.get, "/resource", [("If-Modified-Since", httpDate(t0 - 50))]),
                stored: res
            )
        )
        #expect(
            !privateRules.conditionsMatch(
                request(.get, "/resource", [("If-Modified-Since", httpDate(t0 - 200))]),
                stored: res
            )
        )
        let both = request(.get, "/resource", [("If-None-Match", "\"v2\""), ("If-Modified-Since", httpDate(t0))])
        #expect(!privateRules.conditionsMatch(both, stored: res))
    }

    @Test("RFC 9110 §8.8.3.2 weak and strong comparison")
    func entityTagComparison() throws {
        let weak = try #require(EntityTag(parsing: "W/\"1\""))
        let strong = try #require(EntityTag(parsing: "\"1\""))
        #expect(weak.matchesWeakly(strong))
        #expect(!weak.matchesStrongly(strong))
        #expect(strong.matchesStrongly(try #require(EntityTag(parsing: "\"1\""))))
        #expect(EntityTag(parsing: "1") == nil)
    }

    @Test("§4.3.4 a 304 with a strong validator freshens the stored responses with that tag")
    func freshenStrong() {
        let a = stored(response(200, [("ETag", "\"a\"")]))
        let b = stored(response(200, [("ETag", "\"b\"")]))
        #expect(privateRules.responsesToFreshen([a, b], with: response(304, [("ETag", "\"b\"")])) == [1])
        #expect(privateRules.responsesToFreshen([a, b], with: response(304, [("ETag", "\"c\"")])) == [])
    }

    @Test("§4.3.4 a 304 with a weak validator or Last-Modified freshens the most recent match")
    func freshenWeak() {
        let older = stored(response(200, [("ETag", "W/\"a\"")]), responseTime: t0)
        let newer = stored(response(200, [("ETag", "W/\"a\"")]), responseTime: t0 + 10)
        #expect(privateRules.responsesToFreshen([older, newer], with: response(304, [("ETag", "W/\"a\"")])) == [1])
        let lm = httpDate(t0 - 100)
        let c = stored(response(200, [("Last-Modified", lm)]))
        #expect(privateRules.responsesToFreshen([c], with: response(304, [("Last-Modified", lm)])) == [0])
    }

    @Test("§4.3.4 freshening replaces stored header fields with the 304's, except Content-Length")
    func freshenFields() {
        let original = stored(
            response(
                200,
                [("Cache-Control", "max-age=10"), ("ETag", "\"a\""), ("Content-Length", "5"), ("X-Keep", "k")]
            )
        )
        let notModified = response(304, [("Cache-Control", "max-age=100"), ("Content-Length", "0")], date: t0 + 50)
        let updated = privateRules.freshen(original, with: notModified, requestTime: t0 + 50, responseTime: t0 + 50)
        #expect(updated.response.headerFields[.cacheControl] == "max-age=100")
        #expect(updated.response.headerFields[.contentLength] == "5")
        #expect(updated.response.headerFields[HTTPField.Name("X-Keep")!] == "k")
        #expect(updated.response.status == .ok)
        #expect(privateRules.decide(request(), stored: updated, now: t0 + 60) == .serve(.hit))
    }

    @Test("§4.4 an unsafe method with a success response invalidates the target URI")
    func invalidateTarget() {
        let keys = privateRules.invalidatedKeys(request: request(.post, "/resource"), response: response(200))
        #expect(keys == [CacheKey(request())])
    }

    @Test("§4.4 Location and Content-Location of the same origin are invalidated, other origins' are not")
    func invalidateLocations() {
        let res = response(201, [("Location", "/other"), ("Content-Location", "http://elsewhere.test/x")])
        let keys = privateRules.invalidatedKeys(request: request(.put, "/resource"), response: res)
        #expect(keys.map(\.uri) == ["http://origin.test/resource", "http://origin.test/other"])
    }

    @Test("§4.4 safe methods and error responses invalidate nothing")
    func noInvalidation() {
        #expect(privateRules.invalidatedKeys(request: request(.get), response: response(200)).isEmpty)
        #expect(privateRules.invalidatedKeys(request: request(.delete), response: response(500)).isEmpty)
    }

    @Test("§2 the cache key normalizes scheme, host case and default ports")
    func keyNormalization() {
        #expect(CacheKey(scheme: "HTTP", authority: "Example.COM:80", path: "").uri == "http://example.com/")
        #expect(CacheKey(scheme: "https", authority: "a.test:443", path: "/x?y").uri == "https://a.test/x?y")
        #expect(CacheKey(scheme: "http", authority: "a.test:8080", path: "/").uri == "http://a.test:8080/")
    }
}
