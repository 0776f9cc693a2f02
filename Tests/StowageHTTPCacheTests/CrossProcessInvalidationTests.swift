import Foundation
import HTTPTypes
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// An invalidation of a URL by another process on the same cache directory (an app's
/// extension, a command-line tool) is final for this process's memory level, on the async path
/// and on the event loop's (`memoryAnswer`); this process's own invalidations leave the rest of
/// its memory.
@Suite("HTTPCache: invalidations across processes")
struct CrossProcessInvalidationTests {
    private static let fresh = [("Cache-Control", "max-age=600")]

    @Test("a URL another process invalidates is fetched again, not served from this process's memory")
    func invalidationFromAnotherProcess() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let origin = TestOrigin { _, _ in ok("version 1", Self.fresh, clock: clock) }
            let cache = try makeCache(root, clock: clock)
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "version 1")
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .hit)
            #expect(cache.memoryAnswer(to: request()) != nil, "held in memory")
            let process = TestWorker.process(
                "http-cache",
                ["invalidate", root.appending(path: "http").path, "http://origin.test/resource"]
            )
            let output = childPipe()
            process.standardOutput = output
            try process.run()
            let printed = await BlockingWork.run { output.fileHandleForReading.readDataToEndOfFile() }
            #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
            #expect(String(decoding: printed, as: UTF8.self) == "invalidated\n")
            #expect(cache.memoryAnswer(to: request()) == nil)
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil)
            let again = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(again.outcome != .hit)
            #expect(origin.count == 2)
            try await cache.close()
        }
    }

    @Test("this process's own invalidation leaves the rest of its memory")
    func ownInvalidationKeepsMemory() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let origin = TestOrigin { _, _ in ok("body", Self.fresh, clock: clock) }
            let cache = try makeCache(root, clock: clock)
            for path in ["/a", "/b"] {
                _ = try await text(try await cache.respond(to: request(.get, path), fetch: origin.fetch))
            }
            #expect(try await cache.invalidate(url: "http://origin.test/a"))
            #expect(cache.memoryAnswer(to: request(.get, "/a")) == nil)
            #expect(cache.memoryAnswer(to: request(.get, "/b")) != nil, "still in memory")
            try await cache.close()
        }
    }
}
