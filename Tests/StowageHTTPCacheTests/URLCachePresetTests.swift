import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// `HTTPCache.Configuration.urlCache`: NSURLCache's documented figures, opt-in.
@Suite struct URLCachePresetTests {
    @Test(
        "The URLCache preset has NSURLCache's documented figures: 2 MB memory, 100 MB disk, 5 % per entry, explicit freshness only"
    )
    func presetHasDocumentedFigures() {
        let preset = HTTPCache.Configuration.urlCache
        #expect(preset.memoryCapacity == ByteCount(2 * 1024 * 1024))
        #expect(preset.diskCapacity == ByteCount(100 * 1024 * 1024))
        #expect(preset.maximumEntryFraction == 0.05)
        #expect(preset.maximumBodySize == nil)
        #expect(preset.rules.heuristicFreshness == false)
        #expect(preset.rules.kind == .private)
        #expect(HTTPCache.Configuration().rules.heuristicFreshness, "the general defaults keep heuristic freshness")
    }

    @Test(
        "The URLCache preset's 5 % rule: a body over 5 % of the disk capacity is served, not stored; one over 5 % of memory is stored on disk only"
    )
    func presetAppliesFivePercentRule() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            var configuration = HTTPCache.Configuration.urlCache
            configuration.clock = clock.cacheClock
            let cache = try HTTPCache(directory: root.appending(path: "http"), configuration: configuration)
            let diskLimit = 100 * 1024 * 1024 / 20  // 5 242 880 bytes
            let memoryLimit = 2 * 1024 * 1024 / 20  // 104 857 bytes
            let origin = TestOrigin { request, n in
                let size = request.path == "/over" ? diskLimit + 1 : memoryLimit + 1
                return ok(String(repeating: "x", count: size), [("Cache-Control", "max-age=600")], clock: clock)
            }
            let over = try await cache.respond(to: request(.get, "/over"), fetch: origin.fetch)
            #expect(try await text(over).utf8.count == diskLimit + 1)
            #expect(!over.status.stored)
            #expect(over.trace.contains { $0.contains("over the disk limit of \(diskLimit) bytes") })
            let onDisk = try await cache.respond(to: request(.get, "/disk"), fetch: origin.fetch)
            _ = try await text(onDisk)
            #expect(onDisk.status.stored)
            let hit = try await cache.respond(to: request(.get, "/disk"), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit).utf8.count == memoryLimit + 1)
            #expect(cache.memoryUsage.rawValue < Int64(memoryLimit), "the body skipped memory")
            #expect(origin.count == 2)
        }
    }
}
