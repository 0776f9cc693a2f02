import Foundation
import HTTPTypes
import StowageHTTPCache
import Testing

/// RFC 9111 §3: storing responses.
@Suite struct StorabilityConformanceTests {
    private func isStorable(
        _ rules: CacheRules,
        _ response: HTTPResponse,
        _ request: HTTPRequest = request(),
        forced: Bool = false
    ) -> Bool {
        rules.storability(of: response, for: request, forced: forced) == .storable
    }

    @Test("§3 a response with max-age to a GET is stored")
    func maxAgeStored() {
        #expect(isStorable(privateRules, response(200, [("Cache-Control", "max-age=60")])))
    }

    @Test("§3 the request method must be understood and cacheable: POST is not stored")
    func postNotStored() {
        #expect(!isStorable(privateRules, response(200, [("Cache-Control", "max-age=60")]), request(.post)))
    }

    @Test("§3 the status must be final: 1xx is not stored")
    func informationalNotStored() {
        #expect(!isStorable(privateRules, response(103, [("Cache-Control", "max-age=60")])))
    }

    @Test("§3.3 a 206 is not stored by a cache that does not combine partial content")
    func partialNotStored() {
        #expect(!isStorable(privateRules, response(206, [("Cache-Control", "max-age=60")])))
    }

    @Test("§5.2.2.5 no-store in a response prevents storage")
    func responseNoStore() {
        #expect(!isStorable(privateRules, response(200, [("Cache-Control", "max-age=60, no-store")])))
    }

    @Test("§5.2.1.5 no-store in a request prevents storing its response")
    func requestNoStore() {
        let req = request(.get, "/r", [("Cache-Control", "no-store")])
        #expect(!isStorable(privateRules, response(200, [("Cache-Control", "max-age=60")]), req))
    }

    @Test("§5.2.2.7 private: a shared cache must not store, a private cache may")
    func privateDirective() {
        let res = response(200, [("Cache-Control", "private, max-age=60")])
        #expect(!isStorable(sharedRules, res))
        #expect(isStorable(privateRules, res))
    }

    @Test("§5.2.2.7 qualified private: a shared cache stores the response without the named fields")
    func qualifiedPrivate() {
        let res = response(
            200,
            [("Cache-Control", "private=\"X-User\", max-age=60"), ("X-User", "alice"), ("X-Other", "1")]
        )
        #expect(isStorable(sharedRules, res))
        let kept = sharedRules.fieldsToStore(res.headerFields, responseTime: t0)
        #expect(kept[HTTPField.Name("X-User")!] == nil)
        #expect(kept[HTTPField.Name("X-Other")!] == "1")
        #expect(privateRules.fieldsToStore(res.headerFields, responseTime: t0)[HTTPField.Name("X-User")!] == "alice")
    }

    @Test("§3.5 a shared cache does not store a response to a request with Authorization")
    func authorizationShared() {
        let req = request(.get, "/r", [("Authorization", "Bearer x")])
        #expect(!isStorable(sharedRules, response(200, [("Cache-Control", "max-age=60")]), req))
        #expect(isStorable(privateRules, response(200, [("Cache-Control", "max-age=60")]), req))
    }

    @Test(
        "§3.5 public, s-maxage or must-revalidate let a shared cache store a response to an Authorization request",
        arguments: ["public, max-age=60", "s-maxage=60", "max-age=60, must-revalidate"]
    )
    func authorizationAllowed(cacheControl: String) {
        let req = request(.get, "/r", [("Authorization", "Bearer x")])
        #expect(isStorable(sharedRules, response(200, [("Cache-Control", cacheControl)]), req))
    }

    @Test("§3 a response without explicit freshness is stored when its status is heuristically cacheable")
    func heuristicStatusStored() {
        #expect(isStorable(privateRules, response(200, [("Last-Modified", httpDate(t0 - 1000))])))
        #expect(isStorable(privateRules, response(404)))
    }

    @Test("§3 a status that is not heuristically cacheable needs explicit freshness")
    func nonHeuristicStatus() {
        #expect(!isStorable(privateRules, response(302)))
        #expect(isStorable(privateRules, response(302, [("Cache-Control", "max-age=60")])))
        #expect(isStorable(privateRules, response(302, [("Expires", httpDate(t0 + 60))])))
    }

    @Test("§3 s-maxage makes a response storable in a shared cache")
    func sharedMaxAgeStorable() {
        #expect(isStorable(sharedRules, response(302, [("Cache-Control", "s-maxage=60")])))
    }

    @Test("§5.2.2.3 must-understand with an understood status overrides no-store")
    func mustUnderstandKnown() {
        #expect(isStorable(privateRules, response(200, [("Cache-Control", "must-understand, no-store, max-age=60")])))
    }

    @Test("§5.2.2.3 must-understand with a status the cache does not understand prevents storage")
    func mustUnderstandUnknown() {
        #expect(!isStorable(privateRules, response(299, [("Cache-Control", "must-understand, max-age=60")])))
    }

    @Test("§4.1 a response with Vary: * is not stored (it can never match)")
    func varyStar() {
        #expect(!isStorable(privateRules, response(200, [("Cache-Control", "max-age=60"), ("Vary", "Accept, *")])))
    }

    @Test("§3.1 hop-by-hop fields and those named by Connection are not stored")
    func hopByHopNotStored() {
        let res = response(
            200,
            [
                ("Connection", "X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"), ("Transfer-Encoding", "chunked"),
                ("X-End", "2"),
            ]
        )
        let kept = privateRules.fieldsToStore(res.headerFields, responseTime: t0)
        #expect(kept[HTTPField.Name("X-Hop")!] == nil)
        #expect(kept[.connection] == nil)
        #expect(kept[HTTPField.Name("Keep-Alive")!] == nil)
        #expect(kept[.transferEncoding] == nil)
        #expect(kept[HTTPField.Name("X-End")!] == "2")
    }

    @Test("RFC 9110 §6.6.1 a cached response without Date gets one: the time it was received")
    func dateAdded() {
        let res = response(200, [("Cache-Control", "max-age=60")], date: nil)
        let kept = privateRules.fieldsToStore(res.headerFields, responseTime: t0 + 5)
        #expect(kept[.date] == httpDate(t0 + 5))
    }

    @Test("Forced expiry stores a no-cache response without freshness information, but never no-store")
    func forcedStorability() {
        #expect(isStorable(privateRules, response(302, [("Cache-Control", "no-cache")]), forced: true))
        #expect(!isStorable(privateRules, response(200, [("Cache-Control", "no-store")]), forced: true))
    }
}
