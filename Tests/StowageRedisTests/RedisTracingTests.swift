import InMemoryTracing
import StowageRedis
import StowageRedisTestSupport
import Testing
import Tracing

/// The spans of Redis commands and pipelines against a real redis-server, with an
/// `InMemoryTracer` in the configuration (never the process-wide `InstrumentationSystem`).
@Suite(
    "Redis tracing against redis-server",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct RedisTracingTests {
    @Test("a command, a pipeline and an error reply each give one client span, without keys or values")
    func commandsAndPipelines() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let tracer = InMemoryTracer()
        var configuration = server.configuration
        configuration.tracer = tracer
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }

        try await client.send(.set("session:alice", value: "secret-value"))
        _ = try await client.pipeline([.get("session:alice"), .get("session:bob")])
        await #expect(throws: RedisError.self) {
            try await client.send(RedisCommand("INCR", "session:alice", keyIndex: 1))
        }

        let spans = tracer.finishedSpans
        #expect(spans.count == 3)
        let set = try #require(spans.first)
        #expect(set.operationName == RedisTracing.SpanName.command)
        #expect(set.kind == .client)
        #expect(set.attributes.get(RedisTracing.Attribute.systemName) == "redis")
        #expect(set.attributes.get(RedisTracing.Attribute.operationName) == "SET")
        #expect(set.attributes.get(RedisTracing.Attribute.serverPort) == .int64(Int64(configuration.port)))
        let pipeline = try #require(spans.dropFirst().first)
        #expect(pipeline.operationName == RedisTracing.SpanName.pipeline)
        #expect(pipeline.attributes.get(RedisTracing.Attribute.operationName) == "BATCH GET")
        #expect(pipeline.attributes.get(RedisTracing.Attribute.batchSize) == 2)
        let failed = try #require(spans.last)
        #expect(failed.status?.code == .error)
        #expect(!failed.errors.isEmpty)
        for span in spans {
            span.attributes.forEach { name, value in
                let text = "\(value)"
                #expect(!text.contains("alice") && !text.contains("secret"), "\(span.operationName) \(name) = \(text)")
            }
        }
    }
}
