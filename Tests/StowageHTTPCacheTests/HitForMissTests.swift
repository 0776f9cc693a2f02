import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Synchronization
import Testing

/// Requests for a URL whose last response could not be stored go to the origin at once, not one
/// after another behind a collapsed fetch (Varnish's hit-for-miss); a storable response is stored
/// as always.
@Suite struct HitForMissTests {
    /// An origin answering `no-store` (or `cacheControl`), which holds each `no-store` request
    /// after the first until `together` more have arrived (at most 30 seconds): it sees how
    /// many requests the cache lets through at once.
    final class HoldingOrigin: Sendable {
        struct Counts {
            var inFlight = 0
            var most = 0
            var total = 0
            var cacheControl = "no-store"
        }

        let counts = Mutex(Counts())
        let together: Int

        init(together: Int) { self.together = together }

        var fetch: HTTPFetch {
            { _, _ in
                let (first, cacheControl) = self.counts.withLock { counts in
                    counts.total += 1
                    counts.inFlight += 1
                    counts.most = max(counts.most, counts.inFlight)
                    return (counts.total == 1, counts.cacheControl)
                }
                if !first, cacheControl == "no-store" {
                    // Arrivals after the first: a barrier that opens once `together` have come.
                    try await eventually { self.counts.withLock { $0.total - 1 } >= self.together }
                }
                self.counts.withLock { $0.inFlight -= 1 }
                var response = HTTPResponse(status: .ok)
                response.headerFields[.cacheControl] = cacheControl
                response.headerFields[.contentLength] = "2"
                response.headerFields[.date] = HTTPDate.format(Int64(Date().timeIntervalSince1970))
                return (response, HTTPBody(bytes: Array("ok".utf8)))
            }
        }
    }

    @Test("after a no-store response, concurrent requests for the URL all reach the origin at once")
    func uncacheableURLIsNotCollapsed() async throws {
        try await withTemporaryDirectory { root in
            var configuration = HTTPCache.Configuration(kind: .shared)
            configuration.name = "hit-for-miss"
            let cache = try HTTPCache(directory: root, configuration: configuration)
            let origin = HoldingOrigin(together: 8)
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(first) == "ok")
            origin.counts.withLock { $0.most = 0 }
            let traces = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        let served = try await cache.respond(to: request(), fetch: origin.fetch)
                        _ = try await text(served)
                        return served.trace
                    }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            #expect(origin.counts.withLock { $0.most } == 8, "requests let through at once")
            // None waited for another's fetch (collapsed requests would, for up to collapseTimeout).
            #expect(traces.allSatisfy { $0.contains { $0.contains("hit-for-miss") } })

            // The URL turns cacheable: its response is stored and served, as always (fresh for an
            // hour of the real clock, which a loaded machine does not outrun).
            origin.counts.withLock { $0.cacheControl = "max-age=3600" }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .hit)
        }
    }
}
