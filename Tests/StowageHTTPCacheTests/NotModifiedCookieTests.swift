import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// A 304 that sets a cookie answers the client whose request was validated: that client gets the
/// cookie (a rotated session cookie is not lost), and no other client ever does — except where
/// the operator chose to replay cookies (``SetCookieHandling/store``). Under the default
/// ``SetCookieHandling/doNotStore`` such a 304 does not freshen the stored response either, as
/// Varnish's built-in VCL merges it, delivers it with the cookie and marks it uncacheable.
@Suite struct NotModifiedCookieTests {
    /// The origin: a 200 that must be revalidated and sets no cookie, then a 304 to every
    /// validation, setting the cookie of the user the request names (`X-User`).
    static func origin(clock: ManualClock) -> TestOrigin {
        TestOrigin { request, n in
            if request.headerFields[.ifNoneMatch] != nil {
                let user = request.headerFields[HTTPField.Name("X-User")!] ?? "nobody"
                return (
                    response(
                        304,
                        [("ETag", "\"1\""), ("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=\(user)")],
                        date: clock.now
                    ), []
                )
            }
            return ok("v\(n)", [("ETag", "\"1\""), ("Cache-Control", "no-cache")], clock: clock)
        }
    }

    static func from(_ user: String, _ pairs: [(String, String)] = []) -> HTTPRequest {
        request(.get, "/resource", [("X-User", user)] + pairs)
    }

    @Test(
        "the client of the validation gets the 304's cookie; the next client never gets it (unless the cache stores cookies)",
        arguments: [
            (CacheKind.shared, SetCookieHandling.doNotStore), (.shared, .storeWithoutCookie), (.shared, .store),
            (.private, .doNotStore),
        ]
    )
    func cookieReachesItsClientOnly(kind: CacheKind, handling: SetCookieHandling) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: kind) { $0.rules.setCookie = handling }
            let origin = Self.origin(clock: clock)
            _ = try await text(try await cache.respond(to: Self.from("first"), fetch: origin.fetch))

            let alice = try await cache.respond(to: Self.from("alice"), fetch: origin.fetch)
            #expect(alice.response.headerFields[values: .setCookie] == ["sid=alice"], "\(alice.trace)")
            #expect(alice.response.status == .ok && alice.outcome == .revalidated)
            #expect(try await text(alice) == "v1")

            let bob = try await cache.respond(to: Self.from("bob"), fetch: origin.fetch)
            #expect(try await text(bob) == "v1")
            switch (kind, handling) {
            case (.shared, .doNotStore):
                // Nothing was freshened for bob: he validates in turn and gets his own cookie.
                #expect(bob.outcome == .revalidated, "\(bob.trace)")
                #expect(bob.response.headerFields[values: .setCookie] == ["sid=bob"])
                #expect(origin.count == 3)
            case (.shared, .storeWithoutCookie):
                #expect(bob.outcome == .hit, "\(bob.trace)")
                #expect(bob.response.headerFields[.setCookie] == nil, "alice's cookie is not replayed")
            default:
                // `store`, and a private cache (one user's): the cookie is stored as sent.
                #expect(bob.outcome == .hit, "\(bob.trace)")
                #expect(bob.response.headerFields[values: .setCookie] == ["sid=alice"])
            }
        }
    }

    @Test("a client's own conditional request validated with a 304 that sets a cookie gets a 304 with it")
    func conditionalClientGetsTheCookie() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let origin = Self.origin(clock: clock)
            _ = try await text(try await cache.respond(to: Self.from("first"), fetch: origin.fetch))
            let alice = try await cache.respond(
                to: Self.from("alice", [("If-None-Match", "\"1\"")]),
                fetch: origin.fetch
            )
            #expect(alice.response.status.code == 304, "\(alice.trace)")
            #expect(alice.response.headerFields[values: .setCookie] == ["sid=alice"])
        }
    }

    @Test("a 304 that sets a cookie and whose ETag matches nothing stored still gives its client the cookie")
    func unmatchedNotModifiedGivesTheCookie() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared) { $0.rules.setCookie = .storeWithoutCookie }
            let origin = TestOrigin { request, n in
                if request.headerFields[.ifNoneMatch] != nil {
                    return (response(304, [("ETag", "\"2\""), ("Set-Cookie", "sid=alice")], date: clock.now), [])
                }
                return ok("v\(n)", [("ETag", "\"1\""), ("Cache-Control", "no-cache")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let alice = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(alice.response.headerFields[values: .setCookie] == ["sid=alice"], "\(alice.trace)")
            #expect(try await text(alice) == "v1")
        }
    }
}
