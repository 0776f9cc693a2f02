import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// Issue 17, item 10: `Cache-Status` says `stored` only for a response that was stored.
@Suite struct CacheStatusTruthTests {
    @Test("RFC 9211 §2.7: a response whose store fails is not announced as stored, and is not served later")
    func failedStoreIsNotStored() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: Date(timeIntervalSince1970: t0))
            let cache = try makeCache(root, clock: clock) { $0.memoryCapacity = .zero }
            // A value file cannot be written: the data and scratch directories are files now.
            for name in ["data", "tmp"] {
                let url = root.appending(path: "http/\(name)")
                try FileManager.default.removeItem(at: url)
                try Data("x".utf8).write(to: url)
            }
            let payload = String(repeating: "b", count: 100_000)  // over the inline threshold: a file
            let origin = TestOrigin { _, n in ok(payload + "\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(first) == payload + "1", "the client still gets the response")
            #expect(!first.status.description.contains("stored"), "\(first.status)")
            let second = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(second.outcome == .miss)
            #expect(origin.count == 2)
        }
    }

    @Test("a stored response says stored, and is then a hit")
    func storedAndStoring() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: Date(timeIntervalSince1970: t0))
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { request, _ in
                let size = request.path == "/large" ? 1_000_000 : 1_000
                return ok(String(repeating: "z", count: size), [("Cache-Control", "max-age=60")], clock: clock)
            }
            let small = try await cache.respond(to: request(.get, "/small"), fetch: origin.fetch)
            #expect(small.status.stored)
            let large = try await cache.respond(to: request(.get, "/large"), fetch: origin.fetch)
            #expect(large.status.stored, "a body the origin gave whole is stored before the answer")
            _ = try await text(large)
            #expect(try await cache.respond(to: request(.get, "/large"), fetch: origin.fetch).outcome == .hit)
        }
    }
}
