import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// The disk-index read a server's event loop makes (`memoryAnswer(to:readsDiskIndex: true)`)
/// against what changes under it from outside the handle: another handle (another proxy on
/// the same directory) removing the response, and the clock set back below a stored response's
/// times. It must answer as `respond` does, or leave the request to it.
@Suite("HTTPCache disk-index answers under outside changes")
struct DiskIndexHostileTests {
    private static let fresh = [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]

    @Test(
        "another handle on the directory invalidates: a handle whose memory holds nothing answers nothing from the index"
    )
    func invalidationByAnotherHandle() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let origin = TestOrigin { _, _ in ok("body", Self.fresh, clock: clock) }
            let purging = try makeCache(root, clock: clock, kind: .shared)
            // A memory too small for any response: every hit of this handle is an index read.
            let serving = try makeCache(root, clock: clock, kind: .shared) { $0.memoryCapacity = ByteCount(20) }
            _ = try await text(try await purging.respond(to: request(), fetch: origin.fetch))
            try await purging.disk?.flush()
            #expect(serving.memoryAnswer(to: request(), readsDiskIndex: true)?.served.outcome == .hit)
            #expect(try await purging.invalidate(url: "http://origin.test/resource"))
            #expect(serving.memoryAnswer(to: request(), readsDiskIndex: true) == nil)
            let served = try await serving.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .miss, "\(served.outcome)")
            #expect(origin.count == 2)
            try await purging.close()
            try await serving.close()
        }
    }

    @Test("a response stored before the clock was set back an hour: the index read answers as respond does")
    func responseFromTheFuture() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0.addingTimeInterval(3_600))
            let origin = TestOrigin { _, _ in ok("body", Self.fresh, clock: clock) }
            let first = try makeCache(root, clock: clock, kind: .shared)
            _ = try await text(try await first.respond(to: request(), fetch: origin.fetch))
            try await first.close()
            let cache = try makeCache(root, clock: clock, kind: .shared) { $0.memoryCapacity = ByteCount(20) }
            clock.advance(by: .seconds(-3_600))
            for step in 0..<3 {
                let fast = cache.memoryAnswer(to: request(), readsDiskIndex: true)
                let slow = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(fast?.served.response == slow.response, "step \(step)")
                #expect(fast?.served.status.description == slow.status.description, "step \(step)")
                #expect(fast?.served.trace == slow.trace, "step \(step)")
                #expect(try await text(slow) == "body")
                clock.advance(by: .seconds(25))
            }
            #expect(
                origin.count == 1,
                "fresh from its own response time on, as §4.2.3's resident time is never negative"
            )
            try await cache.close()
        }
    }
}
