import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache

/// An invalidation is final: a response fetched before it is never stored after it, whatever
/// order the origin's answers arrive in (Varnish's bans against an object's insertion time,
/// RFC 9111 §4.2.3 `request_time`).
@Suite struct InvalidationOrderTests {
    /// The ways a URL's stored responses are invalidated.
    enum Invalidation: String, CaseIterable, CustomTestStringConvertible {
        case url, prefix, tag, removeAll, removeResponses, unsafeMethod, urlInMemoryOnly
        var testDescription: String { rawValue }
    }

    /// An origin whose first GET is held until the test opens ``held``: `v1`, then `v2` for every
    /// later one. `Cache-Tag: t` on each.
    final class HeldOrigin: Sendable {
        let arrived = Gate()
        let held = Gate()
        private let gets = Atomic<Int>(0)
        var getCount: Int { gets.load(ordering: .relaxed) }

        var fetch: HTTPFetch {
            { request, _ in
                if request.method != .get {
                    return (response(200, [("Cache-Control", "no-store")]), HTTPBody(bytes: []))
                }
                let index = self.gets.add(1, ordering: .relaxed).newValue
                if index == 1 {
                    self.arrived.open()
                    await self.held.wait()
                }
                let fields = [("Cache-Control", "max-age=600"), ("Cache-Tag", "t")]
                return (response(200, fields), HTTPBody(bytes: Array((index == 1 ? "v1" : "v2").utf8)))
            }
        }
    }

    func makeCache(_ root: URL, clock: ManualClock, memoryOnly: Bool = false) throws -> HTTPCache {
        var configuration = HTTPCache.Configuration(kind: .shared)
        configuration.clock = clock.cacheClock
        configuration.tagFields = [HTTPField.Name("Cache-Tag")!]
        // Only a hang-catcher: a request that joined the held fetch would wait this long.
        configuration.collapseTimeout = .seconds(5)
        return try HTTPCache(directory: memoryOnly ? nil : root.appending(path: "http"), configuration: configuration)
    }

    func invalidate(_ kind: Invalidation, in cache: HTTPCache, origin: HeldOrigin) async throws {
        switch kind {
        case .url, .urlInMemoryOnly: _ = try await cache.invalidate(url: "http://origin.test/resource")
        case .prefix: _ = try await cache.invalidate(urlPrefix: "http://origin.test/res")
        case .tag: _ = try await cache.invalidate(tag: "t")
        case .removeAll: try await cache.removeAll()
        case .removeResponses: try await cache.removeResponses(for: request())
        case .unsafeMethod: _ = try await cache.respond(to: request(.post), fetch: origin.fetch)
        }
    }

    @Test(
        "a response fetched before an invalidation is served to its request but never stored after the refetch",
        arguments: Invalidation.allCases
    )
    func heldFetchIsNotStored(kind: Invalidation) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, memoryOnly: kind == .urlInMemoryOnly)
            let origin = HeldOrigin()
            // Given a GET of v1 in flight, held by the origin,
            let first = Task { try await text(try await cache.respond(to: request(), fetch: origin.fetch)) }
            await origin.arrived.wait()
            // when the URL is invalidated and fetched again (v2, stored),
            try await invalidate(kind, in: cache, origin: origin)
            let refetched = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(refetched) == "v2")
            #expect(refetched.outcome == .miss && !refetched.status.collapsed, "not handed the held fetch")
            #expect(origin.getCount == 2)
            // and only then does the held v1 arrive,
            origin.held.open()
            #expect(try await first.value == "v1", "served to the request that asked before the invalidation")
            // then v2 stays stored.
            let after = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(after) == "v2")
            #expect(after.outcome == .hit)
            #expect(origin.getCount == 2)
        }
    }

    @Test("§4.2.3 a response to an earlier request does not replace one to a later request that arrived first")
    func olderRequestDoesNotReplaceNewer() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            var configuration = HTTPCache.Configuration(kind: .shared)
            configuration.clock = clock.cacheClock
            configuration.collapsesRequests = false
            let cache = try HTTPCache(directory: root.appending(path: "http"), configuration: configuration)
            let origin = HeldOrigin()
            let first = Task { try await text(try await cache.respond(to: request(), fetch: origin.fetch)) }
            await origin.arrived.wait()
            clock.advance(by: .seconds(1))
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v2")
            origin.held.open()
            #expect(try await first.value == "v1")
            let after = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(after) == "v2")
            #expect(after.outcome == .hit)
        }
    }

    @Test("a request that waited on a fetch an invalidation overtook does not get what that fetch stored")
    func followerOfOvertakenFetch() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = HeldOrigin()
            let first = Task { try await text(try await cache.respond(to: request(), fetch: origin.fetch)) }
            await origin.arrived.wait()
            // Joins the held fetch when it comes before the invalidation, leads a fetch of its
            // own when after: either way it is answered, and v1 is not stored.
            let follower = Task { try await text(try await cache.respond(to: request(), fetch: origin.fetch)) }
            _ = try await cache.invalidate(url: "http://origin.test/resource")
            origin.held.open()
            #expect(try await first.value == "v1")
            let waited = try await follower.value
            #expect(waited == "v1" || waited == "v2")
            let after = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(after) == "v2", "v1 was fetched before the invalidation: never stored")
        }
    }

    @Test(
        "a purge heard through the shared level: the fetch another node started before it is stored neither there nor shared",
        arguments: ["url", "prefix", "tag"]
    )
    func heldFetchOnAnotherNode(invalidation: String) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let level = InMemorySharedLevel()
            defer { level.shutDown() }
            func node(_ name: String) throws -> HTTPCache {
                var configuration = HTTPCache.Configuration(kind: .shared)
                configuration.name = name
                configuration.clock = clock.cacheClock
                configuration.tagFields = [HTTPField.Name("Cache-Tag")!]
                configuration.sharedTier = level.node()
                return try HTTPCache(directory: root.appending(path: name), configuration: configuration)
            }
            let (a, b) = (try node("a"), try node("b"))
            let runs = [Task { try await a.run() }, Task { try await b.run() }]
            defer { for run in runs { run.cancel() } }
            let origin = HeldOrigin()
            // Given node a fetching v1, held by the origin,
            let first = Task { try await text(try await a.respond(to: request(), fetch: origin.fetch)) }
            await origin.arrived.wait()
            // when node b invalidates the URL and fetches and shares v2, and a hears of it (the
            // ban, or b's new response: the purge of a URL nobody stored tells no one)
            // before the held v1 arrives at a,
            switch invalidation {
            case "url": _ = try await b.invalidate(url: "http://origin.test/resource")
            case "prefix": _ = try await b.invalidate(urlPrefix: "http://origin.test/")
            default: _ = try await b.invalidate(tag: "t")
            }
            #expect(try await text(try await b.respond(to: request(), fetch: origin.fetch)) == "v2")
            try await eventually { a.invalidations.current > 0 }
            origin.held.open()
            #expect(try await first.value == "v1")
            // then both nodes serve v2.
            for cache in [b, a] {
                let served = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(try await text(served) == "v2", "\(cache.configuration.name)")
            }
            #expect(origin.getCount == 2)
        }
    }
}
