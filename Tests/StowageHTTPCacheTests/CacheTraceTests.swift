import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// "Why not cached": every answer carries the steps that decided it.
@Suite("HTTPCache trace")
struct CacheTraceTests {
    /// The trace of one request, its body read (a response is stored as its body is read).
    private func trace(
        _ cache: HTTPCache,
        _ request: HTTPRequest = request(),
        origin: TestOrigin
    ) async throws -> [String] {
        let served = try await cache.respond(to: request, fetch: origin.fetch)
        _ = try await text(served)
        return served.trace
    }

    @Test(
        "a response that is not stored says which rule refused it",
        arguments: [
            ([("Cache-Control", "no-store")], CacheKind.private, "§5.2.2.5 the response has no-store"),
            ([("Cache-Control", "private, max-age=60")], CacheKind.shared, "§5.2.2.7 private responses"),
            ([("Cache-Control", "max-age=60"), ("Vary", "*")], CacheKind.private, "Vary"),
        ]
    )
    func notStored(fields: [(String, String)], kind: CacheKind, reason: String) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: kind)
            let origin = TestOrigin { _, _ in ok("x", fields, clock: clock) }
            let steps = try await trace(cache, origin: origin)
            #expect(steps.contains("lookup: nothing stored for this URI"), "\(steps)")
            #expect(steps.contains { $0.hasPrefix("not stored:") && $0.contains(reason) }, "\(steps)")
        }
    }

    @Test("the will-cache hook's refusal and a body over the size limit are named")
    func hookAndSize() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.willCache = { $0.request.path == "/refused" ? nil : $0 }
                $0.diskCapacity = ByteCount(10_000)
            }
            let origin = TestOrigin { request, _ in
                let body = request.path == "/large" ? String(repeating: "x", count: 5_000) : "x"
                return ok(
                    body,
                    [("Cache-Control", "max-age=60"), ("Content-Length", String(body.count))],
                    clock: clock
                )
            }
            let refused = try await trace(cache, request(.get, "/refused"), origin: origin)
            #expect(refused.contains("not stored: the will-cache hook refused it"), "\(refused)")
            let large = try await trace(cache, request(.get, "/large"), origin: origin)
            #expect(large.contains { $0.contains("over the disk limit") }, "\(large)")
        }
    }

    @Test("a hit explains its freshness and where the lifetime came from; heuristic freshness is flagged")
    func freshnessExplained() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let lastModified = HTTPDate.format(Int64(clock.secondsSince1970 - 100_000))
            let origin = TestOrigin { request, _ in
                request.path == "/heuristic"
                    ? ok("h", [("Last-Modified", lastModified)], clock: clock)
                    : ok("m", [("Cache-Control", "max-age=60")], clock: clock)
            }
            let stored = try await trace(cache, origin: origin)
            #expect(stored.contains { $0.hasPrefix("§3 stored") }, "\(stored)")
            clock.advance(by: .seconds(10))
            let hit = try await trace(cache, origin: origin)
            #expect(hit.contains("§4.2 age 10 s of a 60 s lifetime from max-age: fresh for 50 s"), "\(hit)")
            #expect(hit.contains("§4.2 fresh: served from the cache"), "\(hit)")

            let heuristic = try await trace(cache, request(.get, "/heuristic"), origin: origin)
            #expect(
                heuristic.contains { $0.contains("§4.2.2 no explicit freshness: heuristic from Last-Modified") },
                "\(heuristic)"
            )
            let reused = try await trace(cache, request(.get, "/heuristic"), origin: origin)
            #expect(reused.contains { $0.contains("from §4.2.2 heuristic freshness") }, "\(reused)")
        }
    }

    @Test("a Vary mismatch, a no-cache request and a 304 are each named")
    func varyNoCacheAndValidation() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, _ in
                if request.headerFields[.ifNoneMatch] == "\"v1\"" {
                    return (response(304, [("ETag", "\"v1\"")], date: clock.now), [])
                }
                return ok(
                    "fr",
                    [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language"), ("ETag", "\"v1\"")],
                    clock: clock
                )
            }
            _ = try await trace(cache, request(.get, "/resource", [("Accept-Language", "fr")]), origin: origin)
            let other = try await trace(cache, request(.get, "/resource", [("Accept-Language", "de")]), origin: origin)
            #expect(other.contains { $0.contains("none matches this request's accept-language") }, "\(other)")

            let noCache = try await trace(
                cache,
                request(.get, "/resource", [("Accept-Language", "fr"), ("Cache-Control", "no-cache")]),
                origin: origin
            )
            #expect(noCache.contains { $0.hasPrefix("§5.2.1.4 the request has no-cache") }, "\(noCache)")
            #expect(noCache.contains { $0.hasPrefix("§4.3.4 the origin answered 304") }, "\(noCache)")
        }
    }
}
