import Foundation
import HTTPTypes
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// A client that sends a new value of a field the origin varies on, request after request.
@Suite struct VaryBombTests {
    @Test("A client varying a Vary field cannot grow one URL's variants without bound; the newest stay")
    func variantsPerURLAreBounded() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let origin = TestOrigin { request, _ in
                ok(
                    "for \(request.headerFields[.userAgent] ?? "-")",
                    [("Cache-Control", "max-age=600"), ("Vary", "User-Agent")],
                    clock: clock
                )
            }
            for agent in 0..<100 {
                let served = try await cache.respond(
                    to: request(.get, "/v", [("User-Agent", "agent-\(agent)")]),
                    fetch: origin.fetch
                )
                _ = try await text(served)
            }
            let records = try await cache.variants(for: cache.rules.key(for: request(.get, "/v")))
            #expect(records.count <= 64)
            #expect(records.count == cache.configuration.maximumVariantsPerURL)
            let oldest = try await cache.respond(
                to: request(.get, "/v", [("User-Agent", "agent-0")]),
                fetch: origin.fetch
            )
            #expect(oldest.outcome != .hit)
            _ = try await text(oldest)
            let newest = try await cache.respond(
                to: request(.get, "/v", [("User-Agent", "agent-99")]),
                fetch: origin.fetch
            )
            #expect(newest.outcome == .hit)
            #expect(try await text(newest) == "for agent-99")
            try await cache.close()
        }
    }
}
