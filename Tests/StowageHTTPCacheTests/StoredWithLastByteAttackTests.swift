import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Synchronization
import Testing

/// The look-ahead at a streamed body's declared length (TeeIterator), against short bodies,
/// odd declared lengths, invalidations around the store, memory-only caches and the will-cache
/// hook's replacement.
@Suite struct StoredWithLastByteAttackTests {
    static func collect(_ served: CachedResponse) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in served.body { bytes += chunk }
        return bytes
    }

    @Test(
        "a streamed body that ends before its declared length is not stored",
        arguments: [false, true]  // without and with a will-cache hook's replacement
    )
    func shortBodyNotStored(replacing: Bool) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) { configuration in
                if replacing {
                    configuration.willCache = { proposal in
                        var proposal = proposal
                        proposal.body = Array("replaced".utf8)
                        return proposal
                    }
                }
            }
            let chunks = [[UInt8](repeating: 1, count: 200_000), [UInt8](repeating: 2, count: 99_999)]
            let (fetch, origin) = chunkedFetch(chunks, declaring: 300_000, contentLength: "300000", clock: clock)
            let first = try await cache.respond(to: request(), fetch: fetch)
            _ = try? await Self.collect(first)
            let second = try await cache.respond(to: request(), fetch: fetch)
            #expect(second.outcome != .hit, "a truncated response was stored: \(second.status)")
            #expect(origin.count == 2)
        }
    }

    @Test("declared lengths 0, -1, before the first chunk's end and huge: the body is passed whole and stored whole")
    func oddDeclaredLengths() async throws {
        let cases: [(chunks: [[UInt8]], length: Int64?)] = [
            ([], 0),
            ([[]], 0),
            ([[], [9]], 0),
            ([[1, 2, 3], [4]], -1),
            ([[UInt8](repeating: 5, count: 300_000)], 270_000),
            ([[UInt8](repeating: 5, count: 300_000), [6]], 300_000),
            ([[UInt8](repeating: 5, count: 300_000), [], [6]], 300_000),
            ([[UInt8](repeating: 5, count: 300_000)], Int64.max),
        ]
        for (index, item) in cases.enumerated() {
            try await withTemporaryDirectory { root in
                let clock = ManualClock(startingAt: t0)
                let cache = try makeCache(root, clock: clock)
                let all = item.chunks.flatMap { $0 }
                let (fetch, origin) = chunkedFetch(item.chunks, declaring: item.length, clock: clock)
                let first = try await cache.respond(to: request(), fetch: fetch)
                #expect(try await Self.collect(first) == all, "case \(index)")
                let second = try await cache.respond(to: request(), fetch: fetch)
                #expect(try await Self.collect(second) == all, "case \(index)")
                #expect(origin.count <= 2)
            }
        }
    }

    @Test(
        "a body longer than a small declared length (or of negative length) is passed whole and stored, not thrown",
        arguments: [10, -1, Int64.min]
    )
    func longerThanASmallDeclaredLength(length: Int64) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let chunks = [[UInt8](repeating: 4, count: 200_000), [UInt8](repeating: 5, count: 100_000)]
            let (fetch, origin) = chunkedFetch(chunks, declaring: length, clock: clock)
            let first = try await cache.respond(to: request(), fetch: fetch)
            #expect(try await Self.collect(first) == chunks[0] + chunks[1])
            let second = try await cache.respond(to: request(), fetch: fetch)
            #expect(second.outcome == .hit)
            #expect(try await Self.collect(second) == chunks[0] + chunks[1])
            #expect(origin.count == 1)
        }
    }

    @Test("a memory-only cache stores a streamed body of declared length by its last byte")
    func memoryOnly() async throws {
        let clock = ManualClock(startingAt: t0)
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.clock = clock.cacheClock
        configuration.memoryCapacity = ByteCount(Int64(64 << 20))
        let cache = try HTTPCache(directory: nil, configuration: configuration)
        let size = 300_000
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let chunks = stride(from: 0, to: size, by: 65_536).map { Array(payload[$0..<min($0 + 65_536, size)]) }
        let (fetch, origin) = chunkedFetch(chunks, declaring: Int64(size), contentLength: "\(size)", clock: clock)
        let first = try await cache.respond(to: request(), fetch: fetch)
        #expect(try await StoredWithLastByteTests.read(size, of: first) == payload)
        let second = try await cache.respond(to: request(), fetch: fetch)
        #expect(second.outcome == .hit)
        #expect(try await Self.collect(second) == payload)
        #expect(origin.count == 1)
    }

    /// A produced body whose producer, after its last declared byte, waits for `gate` before
    /// it ends: the look-ahead waits there.
    final class Gate: Sendable {
        let opened = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let waiting = Atomic<Bool>(false)
        let isOpen = Atomic<Bool>(false)
        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = opened.withLock { state -> Bool in
                    if isOpen.load(ordering: .sequentiallyConsistent) { return true }
                    state = continuation
                    return false
                }
                waiting.store(true, ordering: .sequentiallyConsistent)
                if resumeNow { continuation.resume() }
            }
        }
        func open() {
            let continuation = opened.withLock { state -> CheckedContinuation<Void, Never>? in
                isOpen.store(true, ordering: .sequentiallyConsistent)
                defer { state = nil }
                return state
            }
            continuation?.resume()
        }
    }

    @Test(
        "an invalidation while the look-ahead waits for the origin's end is final: nothing is stored",
        arguments: [false, true]  // on disk, in memory only
    )
    func invalidationDuringLookAhead(memoryOnly: Bool) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            var configuration = HTTPCache.Configuration(kind: .private)
            configuration.clock = clock.cacheClock
            let cache = try HTTPCache(
                directory: memoryOnly ? nil : root.appending(path: "http"),
                configuration: configuration
            )
            let gate = Gate()
            let payload = [UInt8](repeating: 3, count: 300_000)
            let origin = TestOrigin { _, _ in
                (response(200, [("Cache-Control", "max-age=60"), ("Content-Length", "300000")], date: clock.now), [])
            }
            let fetch: HTTPFetch = { request, body in
                let (response, _) = try await origin.fetch(request, body)
                let count = origin.count
                return (
                    response,
                    HTTPBody(length: 300_000) { writer in
                        try await writer.write(Array(payload[..<100_000]))
                        try await writer.write(Array(payload[100_000...]))
                        if count == 1 { await gate.wait() }
                    }
                )
            }
            let first = try await cache.respond(to: request(), fetch: fetch)
            let reader = Task {
                var iterator = first.body.makeAsyncIterator()
                var bytes: [UInt8] = []
                while let chunk = try await iterator.next() { bytes += chunk }
                return bytes
            }
            try await eventually { gate.waiting.load(ordering: .sequentiallyConsistent) }
            _ = try await cache.invalidate(url: "http://origin.test/resource")
            gate.open()
            #expect(try await reader.value == payload)
            let second = try await cache.respond(to: request(), fetch: fetch)
            #expect(second.outcome != .hit, "stored after the invalidation: \(second.status)")
            #expect(origin.count == 2)
        }
    }
}
