import Foundation
import HTTPTypes
import InMemoryTracing
import StowageCache
import StowageCore
import StowageTestSupport
import Testing
import Tracing

@testable import StowageHTTPCache

/// The HTTP cache's records and bodies read through the levels' one read-through sequence
/// (`CacheLevels.read(_:through:)`), as a `HybridCache`'s values are: the same spans below memory,
/// and one rule for bytes that are not what their record says, wherever they come from.
@Suite struct HTTPCacheReadThroughTests {
    /// `body` stored at `/r`, fresh for a minute, by a first handle on `root` on a manual clock;
    /// the origin that served it counts the requests that reach it.
    private func storedResponse(
        _ body: String,
        in root: URL
    ) async throws -> (writer: HTTPCache, origin: TestOrigin, clock: ManualClock) {
        let clock = ManualClock(startingAt: t0)
        let origin = TestOrigin { _, _ in ok(body, [("Cache-Control", "max-age=60")], clock: clock) }
        let writer = try makeCache(root, clock: clock)
        _ = try await text(try await writer.respond(to: request(.get, "/r"), fetch: origin.fetch))
        return (writer, origin, clock)
    }

    @Test(
        "a response read from disk records a get span answered by disk, with the disk read under it, for its record and its body"
    )
    func diskReadsTraced() async throws {
        try await withTemporaryDirectory { root in
            let (_, origin, clock) = try await storedResponse("from disk", in: root)

            // A second handle on the directory: its memory is empty, so both reads go to disk.
            let tracer = InMemoryTracer()
            let reader = try makeCache(root, clock: clock) { $0.tracer = tracer }
            let served = try await reader.respond(to: request(.get, "/r"), fetch: origin.fetch)
            #expect(served.outcome == .hit)
            #expect(try await text(served) == "from disk")
            #expect(origin.count == 1)

            let spans = tracer.finishedSpans
            let respond = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.respond })
            let gets = spans.filter { $0.operationName == CacheTracing.SpanName.get }
            #expect(gets.count == 2, "one for the record, one for the body")
            for get in gets {
                #expect(get.parentSpanID == respond.spanID)
                #expect(get.attributes.get(CacheTracing.Attribute.level) == "disk")
                #expect(get.attributes.get(CacheTracing.Attribute.hit) == true)
                #expect(
                    spans.contains {
                        $0.operationName == CacheTracing.SpanName.diskRead && $0.parentSpanID == get.spanID
                    }
                )
            }

            // Now in memory: the hit makes no span at all.
            tracer.clearFinishedSpans()
            #expect(
                try await text(try await reader.respond(to: request(.get, "/r"), fetch: origin.fetch)) == "from disk"
            )
            #expect(tracer.finishedSpans.isEmpty)
        }
    }

    @Test(
        "a body on disk whose length is not its record's is not served, as from the shared level: a miss, and it goes"
    )
    func diskBodyOfTheWrongLength() async throws {
        try await withTemporaryDirectory { root in
            let (writer, origin, clock) = try await storedResponse("twelve bytes", in: root)
            let record = try #require(try await writer.variants(for: writer.rules.key(for: request(.get, "/r"))).first)
            #expect(record.stored.bodyLength == 12)
            // Another value under the body's key: well formed on disk, not this response's body.
            try await #require(writer.disk).setData(Data("short".utf8), forKey: record.bodyKey)

            let reader = try makeCache(root, clock: clock)
            let served = try await reader.respond(to: request(.get, "/r"), fetch: origin.fetch)
            #expect(served.outcome == .miss)
            #expect(try await text(served) == "twelve bytes")
            #expect(origin.count == 2)
            #expect(try await reader.disk?.data(forKey: record.bodyKey) == nil)
        }
    }
}
