import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// A streamed response of declared length is stored by the time its reader has its last byte:
/// a client that read the whole body and asks again gets a hit (as from nginx, whose cache file
/// is in place once the upstream's last byte is read), not a second trip to the origin.
@Suite struct StoredWithLastByteTests {
    /// Reads `served`'s body until `count` bytes have come, and not one call further.
    static func read(_ count: Int, of served: CachedResponse) async throws -> [UInt8] {
        var iterator = served.body.makeAsyncIterator()
        var bytes: [UInt8] = []
        while bytes.count < count, let chunk = try await iterator.next() { bytes += chunk }
        return bytes
    }

    @Test(
        "a reader that stops at the declared length, without asking for the end, has a stored response: the next request is a hit",
        arguments: [300_000, 3_000_000]  // streamed past the whole-read limit; the larger into a file
    )
    func storedByTheLastByte(size: Int) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let chunks = stride(from: 0, to: size, by: 65_536).map { Array(payload[$0..<min($0 + 65_536, size)]) }
            let (fetch, origin) = chunkedFetch(chunks, declaring: Int64(size), contentLength: "\(size)", clock: clock)
            let first = try await cache.respond(to: request(), fetch: fetch)
            #expect(first.status.detail == "storing", "\(first.status)")
            #expect(try await Self.read(size, of: first) == payload)
            let second = try await cache.respond(to: request(), fetch: fetch)
            #expect(second.outcome == .hit)
            #expect(try await second.body.collect(upTo: 1 << 23) == payload)
            #expect(origin.count == 1)
        }
    }

    @Test("a streamed body longer than it declares reaches the reader whole and is stored whole at its real end")
    func longerThanDeclared() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let chunks = [[UInt8](repeating: 1, count: 300_000), [UInt8](repeating: 2, count: 5)]
            let (fetch, origin) = chunkedFetch(chunks, declaring: 300_000, contentLength: "300000", clock: clock)
            let first = try await cache.respond(to: request(), fetch: fetch)
            #expect(
                try await first.body.collect(upTo: 1 << 20) == chunks[0] + chunks[1],
                "no byte lost to looking ahead"
            )
            let second = try await cache.respond(to: request(), fetch: fetch)
            #expect(second.outcome == .hit)
            #expect(try await second.body.collect(upTo: 1 << 20) == chunks[0] + chunks[1])
            #expect(
                second.response.headerFields[.contentLength] == "300005",
                "the stored length frames the stored body"
            )
            #expect(origin.count == 1)
        }
    }

    @Test(
        "an origin that fails right after the declared bytes: the reader gets every byte, then the error; nothing is stored"
    )
    func failureAfterTheLastByte() async throws {
        struct Cut: Error {}
        struct FailingAfter: AsyncSequence, Sendable {
            let chunk: [UInt8]
            struct AsyncIterator: AsyncIteratorProtocol {
                var sent = false
                let chunk: [UInt8]
                mutating func next() async throws -> [UInt8]? {
                    if sent { throw Cut() }
                    sent = true
                    return chunk
                }
            }
            func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunk: chunk) }
        }
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let chunk = [UInt8](repeating: 7, count: 300_000)
            let origin = TestOrigin { _, _ in (response(200, [("Cache-Control", "max-age=60")], date: clock.now), []) }
            let fetch: HTTPFetch = { request, body in
                let (response, _) = try await origin.fetch(request, body)
                return (response, HTTPBody(FailingAfter(chunk: chunk), length: 300_000))
            }
            let first = try await cache.respond(to: request(), fetch: fetch)
            var iterator = first.body.makeAsyncIterator()
            #expect(try await iterator.next() == chunk, "the last chunk is handed over before the error")
            await #expect(throws: Cut.self) { try await iterator.next() }
            #expect(try await cache.respond(to: request(), fetch: fetch).outcome == .miss)
            #expect(origin.count == 2)
        }
    }
}
