import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// Storage behaviour: variants, invalidation, large bodies on disk, persistence, stale serving,
/// client conditionals and collapsing.
@Suite struct HTTPCacheStorageTests {
    @Test("§4.1 Vary: two variants of one URL are stored side by side and each is selected by its request")
    func varyVariants() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, _ in
                ok(
                    "lang=\(request.headerFields[.acceptLanguage] ?? "-")",
                    [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")],
                    clock: clock
                )
            }
            let en = request(.get, "/v", [("Accept-Language", "en")])
            let fr = request(.get, "/v", [("Accept-Language", "fr")])
            _ = try await text(try await cache.respond(to: en, fetch: origin.fetch))
            _ = try await text(try await cache.respond(to: fr, fetch: origin.fetch))
            let enHit = try await cache.respond(to: en, fetch: origin.fetch)
            let frHit = try await cache.respond(to: fr, fetch: origin.fetch)
            #expect(enHit.outcome == .hit && frHit.outcome == .hit)
            #expect(try await text(enHit) == "lang=en")
            #expect(try await text(frHit) == "lang=fr")
            #expect(origin.count == 2)
        }
    }

    @Test("§4.4 a POST invalidates the stored response of its URI and of a same-origin Location")
    func invalidation() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, n in
                if request.method == .post {
                    return (response(303, [("Location", "/list")], date: clock.now), [])
                }
                return ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock)
            }
            for path in ["/item", "/list"] {
                _ = try await text(try await cache.respond(to: request(.get, path), fetch: origin.fetch))
            }
            let post = try await cache.respond(
                to: request(.post, "/item"),
                body: HTTPBody(bytes: [1]),
                fetch: origin.fetch
            )
            #expect(post.outcome == .bypass)
            #expect(try await cache.respond(to: request(.get, "/item"), fetch: origin.fetch).outcome == .miss)
            #expect(try await cache.respond(to: request(.get, "/list"), fetch: origin.fetch).outcome == .miss)
        }
    }

    @Test("A large body streams to a file in the disk cache and reads back whole after the cache is reopened")
    func largeBodyOnDisk() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let payload = patternedBytes(3_000_000)
            let origin = TestOrigin { _, _ in
                (response(200, [("Cache-Control", "max-age=600")], date: clock.now), payload)
            }
            do {
                let cache = try makeCache(root, clock: clock)
                let first = try await cache.respond(to: request(), fetch: origin.streamingFetch(chunk: 16_384))
                #expect(first.body.bytesInMemory == nil)  // streamed, not buffered
                #expect(try await first.body.collect(upTo: 1 << 26) == payload)
                #expect(try await cache.diskUsage().size.rawValue >= 3_000_000)
            }
            let reopened = try makeCache(root, clock: clock)
            let hit = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(hit.body.bytesInMemory == nil)  // read from its file in chunks
            #expect(try await hit.body.collect(upTo: 1 << 26) == payload)
            #expect(origin.count == 1)
        }
    }

    @Test("A body larger than 5% of the disk capacity is passed through and not stored")
    func tooLargeNotStored() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) { $0.diskCapacity = ByteCount(1_000_000) }
            let origin = TestOrigin { _, _ in
                (
                    response(200, [("Cache-Control", "max-age=600")], date: clock.now),
                    [UInt8](repeating: 7, count: 60_000)
                )
            }
            let first = try await cache.respond(to: request(), fetch: origin.streamingFetch(chunk: 4_096))
            #expect(try await first.body.collect(upTo: 1 << 20).count == 60_000)
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .miss)
        }
    }

    @Test("A body the caller abandons half-way is not stored")
    func abandonedBody() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in
                (
                    response(200, [("Cache-Control", "max-age=600")], date: clock.now),
                    // Over HTTPCache's whole-read limit (256 KiB), so it streams to the caller.
                    [UInt8](repeating: 1, count: 400_000)
                )
            }
            do {
                let first = try await cache.respond(to: request(), fetch: origin.streamingFetch(chunk: 10_000))
                var iterator = first.body.makeAsyncIterator()
                _ = try await iterator.next()
            }
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .miss)
        }
    }

    @Test("RFC 5861 §4 stale-if-error: an origin failure (thrown or 503) is answered with the stale response")
    func staleIfError() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            struct Down: Error {}
            let origin = TestOrigin { _, _ in
                ok("good", [("Cache-Control", "max-age=10, stale-if-error=600")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(60))
            origin.setScript { _, _ in throw Down() }
            let served = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .stale)
            #expect(try await text(served) == "good")
            origin.setScript { _, _ in (response(503, [], date: clock.now), Array("down".utf8)) }
            let on503 = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(on503.outcome == .stale && on503.response.status == .ok)
            clock.advance(by: .seconds(1_000))
            await #expect(throws: Down.self) {
                origin.setScript { _, _ in throw Down() }
                _ = try await cache.respond(to: request(), fetch: origin.fetch)
            }
        }
    }

    @Test("RFC 5861 §3 stale-while-revalidate: the stale response is served at once and refreshed in the background")
    func staleWhileRevalidate() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in
                ok("v\(n)", [("Cache-Control", "max-age=10, stale-while-revalidate=60")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(20))
            let stale = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(stale.outcome == .stale)
            #expect(try await text(stale) == "v1")
            // The background refresh lands without any caller waiting for it.
            try await eventually {
                try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v2"
            }
        }
    }

    @Test("§4.3.2 a client's own conditional request gets a 304 from a fresh stored response")
    func clientConditional() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in
                ok("x", [("Cache-Control", "max-age=60"), ("ETag", "\"t\"")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let conditional = try await cache.respond(
                to: request(.get, "/resource", [("If-None-Match", "\"t\"")]),
                fetch: origin.fetch
            )
            #expect(conditional.response.status == .notModified)
            #expect(conditional.response.headerFields[.eTag] == "\"t\"")
            let mismatch = try await cache.respond(
                to: request(.get, "/resource", [("If-None-Match", "\"u\"")]),
                fetch: origin.fetch
            )
            #expect(mismatch.response.status == .ok)
            #expect(origin.count == 1)
        }
    }

    @Test("§4 HEAD is answered from a stored GET, without a body")
    func headFromGet() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, _ in
                ok("hello", [("Cache-Control", "max-age=60"), ("Content-Length", "5")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let head = try await cache.respond(to: request(.head), fetch: origin.fetch)
            #expect(head.outcome == .hit)
            #expect(head.response.headerFields[.contentLength] == "5")
            #expect(try await head.body.collect(upTo: 10).isEmpty)
            #expect(origin.count == 1)
        }
    }

    @Test("Request collapsing: 20 concurrent requests for one uncached URL make one origin fetch")
    func collapsing() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            // The followers' timeouts sleep on a clock that never moves: this checks collapsing,
            // not the fallback after the timeout, however late a loaded machine runs.
            let waitClock = SteppedClock()
            let cache = try makeCache(root, clock: clock, kind: .shared) { $0.waitClock = waitClock }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            // The leader's fetch is held until the other 19 wait for it.
            let held = Gate()
            let fetch: HTTPFetch = { request, body in
                await held.wait()
                return try await origin.fetch(request, body)
            }
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                defer { held.open() }  // a failed wait must not leave the leader held
                for _ in 0..<20 {
                    group.addTask { try await text(try await cache.respond(to: request(), fetch: fetch)) }
                }
                try await eventually { cache.collapsedRequestCount == 19 }
                held.open()
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(bodies.allSatisfy { $0 == "v1" })
            #expect(origin.count == 1)
        }
    }

    @Test("A record that does not decode is discarded and counts as a miss")
    func corruptRecord() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            try await #require(cache.disk).setData(Data([9, 9, 9]), forKey: "m http://origin.test/resource")
            let origin = TestOrigin { _, _ in ok("x", [("Cache-Control", "max-age=60")], clock: clock) }
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .miss)
        }
    }

    @Test("A bad configuration is a typed error that names the value")
    func badConfiguration() async throws {
        try withTemporaryDirectory { root in
            let error = #expect(throws: StowageError.self) {
                _ = try makeCache(root, clock: ManualClock(startingAt: t0)) {
                    $0.maximumEntryFraction = 2
                }
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("maximumEntryFraction") == true)
            #expect(error?.description.hasPrefix("invalid configuration: ") == true)
        }
    }

    @Test("A private cache with a shared tier is refused: other nodes would serve one user's responses")
    func privateCacheWithSharedTier() async throws {
        try withTemporaryDirectory { root in
            var configuration = HTTPCache.Configuration(kind: .private)
            configuration.sharedTier = InMemorySharedLevel().node()
            let error = #expect(throws: StowageError.self) {
                _ = try HTTPCache(directory: root, configuration: configuration)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("sharedTier") == true)
            configuration.rules.kind = .shared
            _ = try HTTPCache(directory: root, configuration: configuration)
        }
    }
}
