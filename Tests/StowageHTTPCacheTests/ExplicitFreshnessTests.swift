import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// `Configuration.heuristicFreshness`: RFC 9111 §4.2.2 heuristic freshness (the default), or
/// NSURLCache's rule that a response needs `Cache-Control` or `Expires` to be stored.
@Suite struct ExplicitFreshnessTests {
    static func lastModifiedOnly(_ clock: ManualClock) -> [(String, String)] {
        [("Last-Modified", httpDate(clock.now - 86_400))]
    }

    @Test(
        "heuristicFreshness on (the default): a response with only Last-Modified is stored and reused for a heuristic lifetime"
    )
    func heuristicFreshnessStoresLastModifiedOnly() async throws {
        #expect(HTTPCache.Configuration().rules.heuristicFreshness)
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", Self.lastModifiedOnly(clock), clock: clock) }
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            _ = try await text(first)
            #expect(first.status.stored)
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit, "10 % of a day since Last-Modified: fresh for 8 640 s")
            #expect(origin.count == 1)
        }
    }

    @Test(
        "heuristicFreshness off: a response without max-age, s-maxage or Expires is not stored, public and Last-Modified included"
    )
    func explicitFreshnessRefusesResponsesWithoutIt() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) { $0.rules.heuristicFreshness = false }
            let origin = TestOrigin { request, n in
                let directives = request.path == "/public" ? [("Cache-Control", "public")] : []
                return ok("v\(n)", Self.lastModifiedOnly(clock) + directives, clock: clock)
            }
            for path in ["/resource", "/public"] {
                let first = try await cache.respond(to: request(.get, path), fetch: origin.fetch)
                _ = try await text(first)
                #expect(!first.status.stored)
                #expect(first.trace.contains { $0.contains("heuristicFreshness is off") })
                #expect(try await cache.respond(to: request(.get, path), fetch: origin.fetch).outcome == .miss)
            }
            #expect(origin.count == 4)
        }
        let rules = CacheRules(kind: .private, heuristicFreshness: false)
        let lastModified = response(200, [("Last-Modified", httpDate(t0 - 86_400))])
        #expect(rules.storability(of: lastModified, for: request()) != .storable)
        #expect(
            rules.freshnessLifetime(of: stored(lastModified)) == .seconds(0),
            "no heuristic lifetime for one stored before"
        )
    }

    @Test(
        "heuristicFreshness off: responses with max-age, Expires, or s-maxage in a shared cache are stored",
        arguments: [
            (CacheKind.private, [("Cache-Control", "max-age=60")]),
            (.private, [("Expires", httpDate(t0 + 60))]),
            (.shared, [("Cache-Control", "s-maxage=60")]),
        ] as [(CacheKind, [(String, String)])]
    )
    func explicitFreshnessStoresResponsesWithIt(kind: CacheKind, pairs: [(String, String)]) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: kind) { $0.rules.heuristicFreshness = false }
            let origin = TestOrigin { _, n in ok("v\(n)", pairs, clock: clock) }
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            _ = try await text(first)
            #expect(first.status.stored)
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit) == "v1")
        }
    }
}
