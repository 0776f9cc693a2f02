import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// One user's `Set-Cookie` must never be replayed to everyone by a shared cache (nginx's and
/// Varnish's default); a private cache stores cookies as sent; the operator can choose.
@Suite struct SetCookieTests {
    static let sessionCookie: [(String, String)] = [("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=alice")]

    @Test("a shared cache does not store a response that sets a cookie: the next client gets its own from the origin")
    func sharedCacheDoesNotReplayCookies() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let origin = TestOrigin { _, n in
                ok("v\(n)", n == 1 ? Self.sessionCookie : [("Cache-Control", "max-age=600")], clock: clock)
            }
            let alice = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(alice.response.headerFields[.setCookie] == "sid=alice", "the client of the miss gets its cookie")
            #expect(try await text(alice) == "v1")
            let bob = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(bob.outcome != .hit, "\(bob.trace)")
            #expect(bob.response.headerFields[.setCookie] == nil)
            #expect(origin.count == 2)
        }
    }

    // Under the default doNotStore, such a 304 freshens nothing at all (NotModifiedCookieTests).
    @Test("storeWithoutCookie: a 304 that sets a cookie freshens the shared entry without putting the cookie in it")
    func notModifiedCookieIsNotStored() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared) { $0.rules.setCookie = .storeWithoutCookie }
            let origin = TestOrigin { request, n in
                if request.headerFields[.ifNoneMatch] != nil {
                    return (
                        response(
                            304,
                            [("ETag", "\"1\""), ("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=alice")],
                            date: clock.now
                        ), []
                    )
                }
                return ok("v\(n)", [("ETag", "\"1\""), ("Cache-Control", "max-age=1")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(5))
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit, "\(hit.trace)")
            #expect(hit.response.headerFields[.setCookie] == nil)
        }
    }

    @Test("storeWithoutCookie stores the body and drops the cookie; store replays it; a private cache keeps it")
    func operatorChoices() async throws {
        for (kind, handling, expected) in [
            (CacheKind.shared, SetCookieHandling.storeWithoutCookie, nil as String?),
            (.shared, .store, "sid=alice"), (.private, .doNotStore, "sid=alice"),
        ] {
            try await withTemporaryDirectory { root in
                let clock = ManualClock(startingAt: t0)
                let cache = try makeCache(root, clock: clock, kind: kind) { $0.rules.setCookie = handling }
                let origin = TestOrigin { _, n in ok("v\(n)", Self.sessionCookie, clock: clock) }
                let first = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(first.response.headerFields[.setCookie] == "sid=alice")
                _ = try await text(first)
                let hit = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(hit.outcome == .hit, "\(kind) \(handling): \(hit.trace)")
                #expect(hit.response.headerFields[.setCookie] == expected, "\(kind) \(handling)")
                #expect(try await text(hit) == "v1")
            }
        }
    }

    @Test(
        "a record with a cookie from elsewhere (another node set to store, an earlier setting) is served without it"
    )
    func foreignCookieRecordIsServedWithout() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let origin = TestOrigin { _, n in ok("v\(n)", Self.sessionCookie, clock: clock) }
            do {
                let storing = try makeCache(root, clock: clock, kind: .shared) { $0.rules.setCookie = .store }
                _ = try await text(try await storing.respond(to: request(), fetch: origin.fetch))
            }
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit, "\(hit.trace)")
            #expect(hit.response.headerFields[.setCookie] == nil, "alice's cookie is not replayed")
            #expect(try await text(hit) == "v1")
        }
    }

    @Test("a qualified private=\"Set-Cookie\" is stored without the field, as the origin asked")
    func qualifiedPrivateCookie() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let origin = TestOrigin { _, n in
                ok(
                    "v\(n)",
                    [("Cache-Control", "max-age=600, private=\"Set-Cookie\""), ("Set-Cookie", "sid=alice")],
                    clock: clock
                )
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit, "\(hit.trace)")
            #expect(hit.response.headerFields[.setCookie] == nil)
        }
    }
}
