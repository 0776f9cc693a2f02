import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// `Cache-Status` says `stored` only for a response that was stored.
@Suite struct CacheStatusTruthTests {
    @Test("RFC 9211 §2.7: a response whose store fails is not announced as stored, and is not served later")
    func failedStoreIsNotStored() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
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
            let clock = ManualClock(startingAt: t0)
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

    @Test(
        "RFC 9211 §2.7 on a full volume a streamed response says not-stored-no-space, never storing",
        .enabled(if: SmallVolume.canMount, "needs to mount a tmpfs (root)"),
        arguments: [true, false]
    )
    func fullVolumeIsNotStoring(lengthKnown: Bool) async throws {
        let volume = try #require(SmallVolume(bytes: 8 << 20))
        let clock = ManualClock(startingAt: t0)
        let cache = try makeCache(URL(filePath: volume.path), clock: clock) { $0.memoryCapacity = .zero }
        // Over the 256 KiB read whole before answering: the body streams after the head.
        let payload = [UInt8](repeating: UInt8(ascii: "s"), count: 1_000_000)
        let origin = TestOrigin { _, _ in
            ok(String(decoding: payload, as: UTF8.self), [("Cache-Control", "max-age=60")], clock: clock)
        }
        let fetch: HTTPFetch = { request, body in
            let (response, whole) = try await origin.fetch(request, body)
            let bytes = whole.bytesInMemory ?? []
            let chunks = stride(from: 0, to: bytes.count, by: 65_536).map {
                Array(bytes[$0..<min($0 + 65_536, bytes.count)])
            }
            return (response, HTTPBody(ChunkSequence(chunks: chunks), length: lengthKnown ? Int64(bytes.count) : nil))
        }
        volume.fill()
        let full = try await cache.respond(to: request(), fetch: fetch)
        #expect(full.status.detail == "not-stored-no-space", "\(full.status)")
        #expect(!full.status.stored)
        #expect(!full.status.description.contains("storing"), "\(full.status)")
        #expect(try await text(full).utf8.count == payload.count, "the client still gets the response")
        #expect(try await cache.respond(to: request(), fetch: fetch).outcome == .miss, "nothing was stored")
        // With room again, the same response streams into the cache and says so.
        volume.free()
        let roomy = try await cache.respond(to: request(), fetch: fetch)
        #expect(roomy.status.detail == "storing", "\(roomy.status)")
        _ = try await text(roomy)
        #expect(try await cache.respond(to: request(), fetch: fetch).outcome == .hit)
        #expect(origin.count == 3)
    }
}
