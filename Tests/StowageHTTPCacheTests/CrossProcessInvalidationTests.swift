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

    /// Runs `http-cache invalidate DIR URL` in another process; what it printed.
    private static func invalidateInAnotherProcess(_ directory: String, _ url: String) async throws -> String {
        let process = TestWorker.process("http-cache", ["invalidate", directory, url])
        let output = childPipe()
        process.standardOutput = output
        try process.run()
        let printed = await BlockingWork.run { output.fileHandleForReading.readDataToEndOfFile() }
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        return String(decoding: printed, as: UTF8.self)
    }

    @Test("a response requested before another process invalidates its URL is served, not stored")
    func fetchInFlightDuringInvalidationFromAnotherProcess() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let directory = root.appending(path: "http").path
            let cache = try makeCache(root, clock: clock)
            // The origin answers with what it had, then the other process (an app's extension
            // after a POST) invalidates the URL before the answer arrives here: as an
            // invalidation of this process's own, it keeps the older answer from being stored.
            let fetch: HTTPFetch = { _, _ in
                let printed = try await Self.invalidateInAnotherProcess(directory, "http://origin.test/resource")
                #expect(printed == "not stored\n")
                let (response, body) = ok("version 1", Self.fresh, clock: clock)
                return (response, HTTPBody(bytes: body))
            }
            #expect(try await text(try await cache.respond(to: request(), fetch: fetch)) == "version 1")
            let origin = TestOrigin { _, _ in ok("version 2", Self.fresh, clock: clock) }
            let again = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(again.outcome != .hit)
            #expect(try await text(again) == "version 2")
            #expect(origin.count == 1)
            try await cache.close()
        }
    }
}
