import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// The cache end to end over storage (real DiskCache in a temporary directory), with an
/// in-process origin; URLCache's scenarios and request policies.
@Suite struct HTTPCacheTests {
    @Test("without a shared level, run() waits until cancelled and returns without an error")
    func runWithoutSharedLevel() async throws {
        try await withTemporaryDirectory { root in
            let cache = try makeCache(root, clock: ManualClock(startingAt: t0))
            let run = Task { try await cache.run() }
            // Cancelled before or after run() began waiting: either way it returns without an error.
            run.cancel()
            try await run.value
        }
    }

    // MARK: URLCache scenarios

    @Test("URLCache: Cache-Control max-age is honoured — a second request within it never reaches the origin")
    func maxAgeHonoured() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(first.outcome == .miss)
            #expect(try await text(first) == "v1")
            clock.advance(by: .seconds(30))
            let second = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(second.outcome == .hit)
            #expect(try await text(second) == "v1")
            #expect(second.response.headerFields[.age] == "30")
            #expect(origin.count == 1)
            clock.advance(by: .seconds(31))
            let third = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(third) == "v3" || origin.count == 2)
            #expect(origin.count == 2)
        }
    }

    @Test(
        "URLCache: ETag round trip — the stale response is validated with If-None-Match and a 304 is served from cache"
    )
    func etagRoundTrip() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, _ in
                if request.headerFields[.ifNoneMatch] == "\"abc\"" {
                    return (
                        response(
                            304,
                            [("ETag", "\"abc\""), ("Cache-Control", "max-age=10")],
                            date: clock.now
                        ), []
                    )
                }
                return ok("body", [("ETag", "\"abc\""), ("Cache-Control", "max-age=10")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(20))
            let revalidated = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(revalidated.outcome == .revalidated)
            #expect(revalidated.response.status == .ok)  // never a 304 to a caller that did not ask
            #expect(try await text(revalidated) == "body")
            #expect(origin.requests.last?.headerFields[.ifNoneMatch] == "\"abc\"")
            // Freshened: fresh again for 10 s.
            clock.advance(by: .seconds(5))
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .hit)
            #expect(origin.count == 2)
        }
    }

    @Test("URLCache: Last-Modified round trip with If-Modified-Since")
    func lastModifiedRoundTrip() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let modified = httpDate(t0 - 1_000)
            let origin = TestOrigin { request, _ in
                if request.headerFields[.ifModifiedSince] == modified {
                    return (response(304, [("Last-Modified", modified)], date: clock.now), [])
                }
                return ok("page", [("Last-Modified", modified), ("Cache-Control", "no-cache")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let second = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(second.outcome == .revalidated)
            #expect(try await text(second) == "page")
            #expect(origin.requests[1].headerFields[.ifModifiedSince] == modified)
        }
    }

    @Test("URLCache: a forced expiry interval overrides no-cache headers for matching requests only")
    func forcedExpiry() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.forcedExpiry = [ForcedExpiry(host: "origin.test", pathPrefix: "/catalog", interval: .seconds(600))]
            }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "no-cache, no-transform")], clock: clock) }
            let catalog = request(.get, "/catalog/items")
            _ = try await text(try await cache.respond(to: catalog, fetch: origin.fetch))
            clock.advance(by: .seconds(599))
            let hit = try await cache.respond(to: catalog, fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit) == "v1")
            clock.advance(by: .seconds(2))
            #expect(try await text(try await cache.respond(to: catalog, fetch: origin.fetch)) == "v2")
            // Another path: no-cache holds.
            _ = try await text(try await cache.respond(to: request(.get, "/other"), fetch: origin.fetch))
            let other = try await cache.respond(to: request(.get, "/other"), fetch: origin.fetch)
            #expect(other.outcome != .hit)
            #expect(origin.count == 4)
        }
    }

    @Test(
        "NSURLConnection's willCacheResponse: the will-cache hook refuses a response (nothing stored) or changes it before it is stored"
    )
    func willCache() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.willCache = { proposal in
                    if proposal.request.path == "/refused" { return nil }
                    var proposal = proposal
                    proposal.response.headerFields[.setCookie] = nil
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in
                ok("v\(n)", [("Cache-Control", "max-age=60"), ("Set-Cookie", "id=1")], clock: clock)
            }
            for _ in 0..<2 {
                _ = try await text(try await cache.respond(to: request(.get, "/refused"), fetch: origin.fetch))
            }
            #expect(origin.count == 2)
            _ = try await text(try await cache.respond(to: request(.get, "/changed"), fetch: origin.fetch))
            let hit = try await cache.respond(to: request(.get, "/changed"), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(hit.response.headerFields[.setCookie] == nil)
            #expect(origin.count == 3)
        }
    }

    @Test("The will-cache hook may keep a response in memory only: served while open, gone after reopening")
    func memoryOnly() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.storage = .memoryOnly
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            do {
                let cache = try makeCache(root, clock: clock, configure: configure)
                _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
                #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .hit)
                #expect(try await cache.diskUsage().count == 0)
            }
            let reopened = try makeCache(root, clock: clock, configure: configure)
            #expect(try await reopened.respond(to: request(), fetch: origin.fetch).outcome == .miss)
        }
    }

    // MARK: URLCache policies

    @Test("Policy reloadIgnoringLocalCacheData: always loads, and stores the new response")
    func reloadIgnoring() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let reloaded = try await cache.respond(
                to: request(),
                policy: .reloadIgnoringLocalCacheData,
                fetch: origin.fetch
            )
            #expect(reloaded.outcome == .miss)
            #expect(try await text(reloaded) == "v2")
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v2")
            #expect(origin.count == 2)
        }
    }

    @Test(
        "Policy reloadIgnoringLocalAndRemoteCacheData: loads with no-cache and Pragma for caches upstream, stores the response"
    )
    func reloadIgnoringEverywhere() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            var withDirectives = request()
            withDirectives.headerFields[.cacheControl] = "max-stale=5"
            let reloaded = try await cache.respond(
                to: withDirectives,
                policy: .reloadIgnoringLocalAndRemoteCacheData,
                fetch: origin.fetch
            )
            #expect(reloaded.outcome == .miss)
            #expect(try await text(reloaded) == "v2")
            let upstream = try #require(origin.requests.last)
            #expect(upstream.headerFields[.cacheControl] == "max-stale=5, no-cache")
            #expect(upstream.headerFields[.pragma] == "no-cache")
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v2")
            #expect(origin.count == 2)
        }
    }

    @Test("purge by URL, ban by URL prefix and by surrogate key; tags never reach clients")
    func purgeAndBan() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared) {
                $0.tagFields = [HTTPField.Name("Surrogate-Key")!, HTTPField.Name("Cache-Tag")!]
            }
            let origin = TestOrigin { request, n in
                let path = request.path ?? "/"
                let tags = path.hasPrefix("/news/") ? "news front" : path == "/shop/cart" ? "shop" : "other"
                return ok(
                    "v\(n)",
                    [("Cache-Control", "max-age=600"), ("Surrogate-Key", tags), ("Cache-Tag", "all")],
                    clock: clock
                )
            }
            func get(_ path: String) async throws -> (text: String, served: CachedResponse) {
                let served = try await cache.respond(to: request(.get, path), fetch: origin.fetch)
                return (try await text(served), served)
            }
            for path in ["/news/1", "/news/2", "/shop/cart", "/about"] {
                let first = try await get(path)
                #expect(
                    first.served.response.headerFields[HTTPField.Name("Surrogate-Key")!] == nil,
                    "stripped for the client"
                )
            }
            #expect(try await get("/news/1").served.outcome == .hit)
            #expect(try await get("/about").served.response.headerFields[HTTPField.Name("Cache-Tag")!] == nil)

            #expect(try await cache.invalidate(tag: "news") == 2)
            #expect(try await get("/news/1").served.outcome == .miss)
            #expect(try await get("/news/2").served.outcome == .miss)
            #expect(try await get("/shop/cart").served.outcome == .hit)

            #expect(try await cache.invalidate(urlPrefix: "http://origin.test/shop/") == 1)
            #expect(try await get("/shop/cart").served.outcome == .miss)

            #expect(try await cache.invalidate(url: "http://origin.test/about"))
            #expect(try await !cache.invalidate(url: "http://origin.test/never"))
            #expect(try await get("/about").served.outcome == .miss)
            await #expect {
                try await cache.invalidate(url: "/relative")
            } throws: { ($0 as? StowageError)?.code == .invalidArgument }
            // Everything was tagged "all" (the Cache-Tag field).
            #expect(try await cache.invalidate(tag: "all") == 4)
        }
    }

    @Test("statistics: the tiers' hits, writes and bytes, readable by code")
    func statistics() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("body \(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let before = cache.statistics
            #expect(before.disk.writes == 2, "a record and a body")
            #expect(before.disk.bytesWritten > Int64("body 1".utf8.count))
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "body 1")
            let after = cache.statistics
            #expect(after.memory.hits == before.memory.hits + 2, "record and body from memory")
            #expect(after.bytesRead >= before.bytesRead + Int64("body 1".utf8.count))
        }
    }

    @Test("Policy returnCacheDataElseLoad: serves a stale response without validation; loads on a miss")
    func returnCacheElseLoad() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=1")], clock: clock) }
            let miss = try await cache.respond(to: request(), policy: .returnCacheDataElseLoad, fetch: origin.fetch)
            #expect(miss.outcome == .miss)
            _ = try await text(miss)
            clock.advance(by: .seconds(3_600))
            let stale = try await cache.respond(to: request(), policy: .returnCacheDataElseLoad, fetch: origin.fetch)
            #expect(stale.outcome == .stale)
            #expect(try await text(stale) == "v1")
            #expect(origin.count == 1)
        }
    }

    @Test("Policy returnCacheDataDontLoad (offline): serves what is stored however old; a miss is a notCached error")
    func offline() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=1")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(86_400))
            let offline = try await cache.respond(to: request(), policy: .returnCacheDataDontLoad, fetch: origin.fetch)
            #expect(try await text(offline) == "v1")
            let error = await #expect(throws: StowageError.self) {
                _ = try await cache.respond(
                    to: request(.get, "/never"),
                    policy: .returnCacheDataDontLoad,
                    fetch: origin.fetch
                )
            }
            #expect(error?.code == .notCached)
            #expect(error?.message.contains("http://origin.test/never") == true)
            #expect(origin.count == 1)
        }
    }

    @Test("Policy reloadRevalidatingCacheData: a fresh response is still validated with the origin")
    func reloadRevalidating() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, _ in
                if request.headerFields[.ifNoneMatch] != nil {
                    return (response(304, [("ETag", "\"e\"")], date: clock.now), [])
                }
                return ok("v", [("Cache-Control", "max-age=600"), ("ETag", "\"e\"")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let validated = try await cache.respond(
                to: request(),
                policy: .reloadRevalidatingCacheData,
                fetch: origin.fetch
            )
            #expect(validated.outcome == .revalidated)
            #expect(try await text(validated) == "v")
            #expect(origin.count == 2)
        }
    }

    @Test("Policy useProtocolCachePolicy with only-if-cached: a miss is a 504")
    func onlyIfCached() async throws {
        try await withTemporaryDirectory { root in
            let cache = try makeCache(root, clock: ManualClock(startingAt: t0))
            let origin = TestOrigin { _, _ in (response(200), []) }
            let served = try await cache.respond(
                to: request(.get, "/r", [("Cache-Control", "only-if-cached")]),
                fetch: origin.fetch
            )
            #expect(served.response.status.code == 504)
            #expect(origin.count == 0)
        }
    }
}
