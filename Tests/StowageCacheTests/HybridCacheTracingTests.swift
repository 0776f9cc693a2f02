import Foundation
import InMemoryTracing
import StowageCache
import StowageTestSupport
import StowageTesting
import Testing
import Tracing

/// The spans of a `HybridCache`'s reads below memory and its writes, with an `InMemoryTracer`
/// given in the configuration (never the process-wide `InstrumentationSystem`).
@Suite struct HybridCacheTracingTests {
    /// A key that looks like user data: no span may carry it.
    static let key = "user:alice@example.com/inbox?token=s3cr3t"

    private func makeCache(
        _ directory: URL,
        name: String,
        tracer: InMemoryTracer,
        shared: (any SharedCacheTier)? = nil
    ) throws -> HybridCache<String> {
        var memory = MemoryCache<String, String>.Configuration(name: name)
        memory.memoryPressureSource = nil
        return HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: directory.appending(path: name), configuration: .init(name: name)),
            serializer: StringSerializer(),
            shared: shared,
            configuration: .init(tracer: tracer)
        )
    }

    @Test("a disk hit: a get span answered by disk, with the disk read under it; a memory hit records nothing")
    func diskHit() async throws {
        try await withTemporaryDirectory { directory in
            let tracer = InMemoryTracer()
            let cache = try makeCache(directory, name: "traced", tracer: tracer)
            try await cache.setValue("hello", forKey: Self.key)
            let write = try #require(tracer.finishedSpans.first { $0.operationName == CacheTracing.SpanName.diskWrite })
            #expect(write.attributes.get(CacheTracing.Attribute.bytes) == 5)

            _ = cache.memory.removeValue(forKey: Self.key)
            tracer.clearFinishedSpans()
            #expect(try await cache.value(forKey: Self.key) == "hello")

            let spans = tracer.finishedSpans
            let get = try #require(spans.first { $0.operationName == CacheTracing.SpanName.get })
            #expect(get.attributes.get(CacheTracing.Attribute.level) == "disk")
            #expect(get.attributes.get(CacheTracing.Attribute.hit) == true)
            #expect(get.attributes.get(CacheTracing.Attribute.keyLength) == .int64(Int64(Self.key.utf8.count)))
            #expect(get.attributes.get(CacheTracing.Attribute.cacheName) == "traced")
            let read = try #require(spans.first { $0.operationName == CacheTracing.SpanName.diskRead })
            #expect(read.parentSpanID == get.spanID)
            #expect(read.attributes.get(CacheTracing.Attribute.hit) == true)
            #expect(read.attributes.get(CacheTracing.Attribute.bytes) == 5)
            #expect(!spans.contains { $0.operationName == CacheTracing.SpanName.sharedRead }, "no shared level")
            Self.expectNoRawKey(in: spans)

            // Now in memory: the hit makes no span at all.
            tracer.clearFinishedSpans()
            #expect(try await cache.value(forKey: Self.key) == "hello")
            #expect(tracer.finishedSpans.isEmpty && tracer.activeSpans.isEmpty)
        }
    }

    @Test("a shared-level hit: the disk read misses, the shared read hits, and the fill is written to disk")
    func sharedHit() async throws {
        let level = InMemorySharedLevel()
        defer { level.shutDown() }
        try await withTemporaryDirectory { directory in
            let writerTracer = InMemoryTracer()
            let writer = try makeCache(directory, name: "writer", tracer: writerTracer, shared: level.node())
            try await writer.setValue("shared value", forKey: Self.key)
            let sharedWrite = try #require(
                writerTracer.finishedSpans.first { $0.operationName == CacheTracing.SpanName.sharedWrite }
            )
            #expect(sharedWrite.kind == .client)
            #expect(sharedWrite.attributes.get(CacheTracing.Attribute.bytes) == 12)

            let tracer = InMemoryTracer()
            let reader = try makeCache(directory, name: "reader", tracer: tracer, shared: level.node())
            #expect(try await reader.value(forKey: Self.key) == "shared value")

            let spans = tracer.finishedSpans
            let get = try #require(spans.first { $0.operationName == CacheTracing.SpanName.get })
            #expect(get.attributes.get(CacheTracing.Attribute.level) == "shared")
            #expect(get.attributes.get(CacheTracing.Attribute.hit) == true)
            let diskRead = try #require(spans.first { $0.operationName == CacheTracing.SpanName.diskRead })
            #expect(diskRead.parentSpanID == get.spanID)
            #expect(diskRead.attributes.get(CacheTracing.Attribute.hit) == false)
            let sharedRead = try #require(spans.first { $0.operationName == CacheTracing.SpanName.sharedRead })
            #expect(sharedRead.parentSpanID == get.spanID)
            #expect(sharedRead.kind == .client)
            #expect(sharedRead.attributes.get(CacheTracing.Attribute.hit) == true)
            #expect(sharedRead.attributes.get(CacheTracing.Attribute.bytes) == 12)
            let fill = try #require(spans.first { $0.operationName == CacheTracing.SpanName.diskWrite })
            #expect(fill.traceID == get.traceID)
            Self.expectNoRawKey(in: spans + writerTracer.finishedSpans)
        }
    }

    @Test("a miss everywhere: hit false and no level")
    func missEverywhere() async throws {
        try await withTemporaryDirectory { directory in
            let tracer = InMemoryTracer()
            let cache = try makeCache(directory, name: "empty", tracer: tracer)
            #expect(try await cache.value(forKey: Self.key) == nil)
            let get = try #require(tracer.finishedSpans.first { $0.operationName == CacheTracing.SpanName.get })
            #expect(get.attributes.get(CacheTracing.Attribute.hit) == false)
            #expect(get.attributes.get(CacheTracing.Attribute.level) == nil)
        }
    }

    /// No attribute of `spans` holds the key or a part of it that could identify the user.
    static func expectNoRawKey(in spans: [FinishedInMemorySpan]) {
        #expect(!spans.isEmpty)
        for span in spans {
            span.attributes.forEach { name, value in
                let text = "\(value)"
                #expect(!text.contains("alice") && !text.contains("s3cr3t"), "\(span.operationName) \(name) = \(text)")
            }
        }
    }
}
