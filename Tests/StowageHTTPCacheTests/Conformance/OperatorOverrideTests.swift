import Foundation
import HTTPTypes
import StowageHTTPCache
import Testing

/// The operator's overrides of what origins say (nginx's proxy_cache_valid and use_stale).
@Suite struct OperatorOverrideTests {
    private let operated = CacheRules(
        kind: .shared,
        defaultLifetimes: [404: .seconds(60), 200: .seconds(600)],
        staleIfErrorGrace: .seconds(30),
        staleWhileUpdatingGrace: .seconds(10)
    )

    @Test("a lifetime by status applies only without explicit freshness; max-age and Expires still win")
    func lifetimesYieldToTheOrigin() {
        #expect(operated.freshnessLifetime(of: stored(response(404))) == .seconds(60))
        #expect(operated.freshnessLifetime(of: stored(response(200, [("Cache-Control", "max-age=5")]))) == .seconds(5))
        #expect(operated.freshnessLifetime(of: stored(response(200, [("Expires", httpDate(t0 + 20))]))) == .seconds(20))
        #expect(operated.storability(of: response(404), for: request()) == .storable)
        #expect(!operated.usesHeuristicFreshness(stored(response(404))))
    }

    @Test("stale-if-error grace overrides must-revalidate, up to its bound")
    func errorGrace() {
        let entry = stored(response(200, [("Cache-Control", "max-age=10, must-revalidate")]))
        #expect(operated.mayServeStaleOnError(entry, request: request(), now: t0 + 39))
        #expect(!operated.mayServeStaleOnError(entry, request: request(), now: t0 + 41))
        #expect(!sharedRules.mayServeStaleOnError(entry, request: request(), now: t0 + 11))
    }

    @Test("stale-while-updating grace serves stale and refreshes; a request's no-cache still validates first")
    func updatingGrace() {
        let entry = stored(response(200, [("Cache-Control", "max-age=10, must-revalidate")]))
        #expect(operated.decide(request(), stored: entry, now: t0 + 15) == .serveStaleAndRevalidate)
        #expect(operated.decide(request(), stored: entry, now: t0 + 25) == .validate)
        let reload = request(.get, "/resource", [("Cache-Control", "no-cache")])
        #expect(operated.decide(reload, stored: entry, now: t0 + 15) == .validate)
    }
}

/// Cache keys shaped by the operator (nginx's proxy_cache_key).
@Suite struct CacheKeyRulesTests {
    private let rules = CacheRules(
        kind: .shared,
        keyRules: CacheKeyRules(ignoredQueryParameters: ["utm_*", "fbclid"], sortsQueryParameters: true)
    )

    @Test("ignored parameters leave the key, the rest are sorted; a query left empty goes")
    func shapesQueries() {
        #expect(rules.key(for: request(.get, "/a?utm_source=x&b=2&fbclid=9&a=1")).uri == "http://origin.test/a?a=1&b=2")
        #expect(rules.key(for: request(.get, "/a?b=2&a=1")) == rules.key(for: request(.get, "/a?a=1&b=2&utm_medium=m")))
        #expect(rules.key(for: request(.get, "/a?utm_source=x")).uri == "http://origin.test/a")
        #expect(
            rules.key(for: request(.get, "/a?utm=keep")).uri == "http://origin.test/a?utm=keep",
            "utm_* is a prefix with the underscore"
        )
        #expect(
            sharedRules.key(for: request(.get, "/a?b=2&a=1")).uri == "http://origin.test/a?b=2&a=1",
            "no rules: as RFC 9111 makes it"
        )
    }

    @Test("sorting is by name only and stable: repeated names keep their order, so ?a=2&a=1 is not ?a=1&a=2")
    func sortsStablyByName() {
        #expect(rules.key(for: request(.get, "/a?a=2&a=1")) != rules.key(for: request(.get, "/a?a=1&a=2")))
        #expect(rules.key(for: request(.get, "/a?b=1&a=2&a=1")).uri == "http://origin.test/a?a=2&a=1&b=1")
        #expect(rules.key(for: request(.get, "/a?a=x&b=1&a")).uri == "http://origin.test/a?a=x&a&b=1")
    }

    @Test("ignored parameters are removed from what goes to the origin; the others keep their order")
    func ignoredParametersDoNotReachTheOrigin() {
        let keyRules = rules.keyRules
        #expect(
            keyRules.removingIgnoredParameters(from: request(.get, "/a?utm_source=<x>&b=2&fbclid=9&a=1")).path
                == "/a?b=2&a=1"
        )
        #expect(keyRules.removingIgnoredParameters(from: request(.get, "/a?utm_source=x")).path == "/a")
        #expect(keyRules.removingIgnoredParameters(from: request(.get, "/a?b=2")).path == "/a?b=2")
        #expect(
            CacheKeyRules().removingIgnoredParameters(from: request(.get, "/a?utm_source=x")).path == "/a?utm_source=x"
        )
    }

    @Test("§4.4 invalidation uses the same keys")
    func invalidationUsesTheRules() {
        let post = request(.post, "/a?utm_source=x&b=2&a=1")
        let keys = rules.invalidatedKeys(request: post, response: response(200, [("Location", "/c?z=1&utm_id=3&y=2")]))
        #expect(keys.map(\.uri) == ["http://origin.test/a?a=1&b=2", "http://origin.test/c?y=2&z=1"])
    }
}
