import Foundation
import InMemoryTracing
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Testing
import Tracing

/// The spans of proxied requests, with an `InMemoryTracer` given to the proxy (never the
/// process-wide `InstrumentationSystem`, which other suites share).
@Suite struct ProxyTracingTests {
    @Test(
        "a proxied miss gives proxy request → cache decision → origin fetch and store; the hit after it fetches nothing"
    )
    func missSpanTree() async throws {
        let tracer = InMemoryTracer()
        try await ProxyHarness.run(configure: { $0.tracer = tracer }, script: versioned(maxAge: 60, prefix: "v")) { h in
            let miss = try await h.get("/traced?user=alice")
            #expect(miss.text == "v1")
            let spans = try await finishedSpans(of: tracer, including: ProxyTracing.SpanName.request)

            let request = try #require(spans.first { $0.operationName == ProxyTracing.SpanName.request })
            #expect(request.kind == .server)
            #expect(request.parentSpanID == nil)
            #expect(request.attributes.get(HTTPCacheTracing.Attribute.requestMethod) == "GET")
            #expect(request.attributes.get(HTTPCacheTracing.Attribute.responseStatusCode) == 200)
            #expect(request.attributes.get(HTTPCacheTracing.Attribute.outcome) == "miss")

            let decision = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.respond })
            #expect(decision.parentSpanID == request.spanID)
            #expect(decision.traceID == request.traceID)
            #expect(decision.attributes.get(HTTPCacheTracing.Attribute.outcome) == "miss")
            #expect(decision.attributes.get(HTTPCacheTracing.Attribute.requestMethod) == "GET")
            #expect(decision.attributes.get(HTTPCacheTracing.Attribute.responseStatusCode) == 200)
            let uri = try #require(text(decision, HTTPCacheTracing.Attribute.urlFull))
            #expect(uri.hasSuffix("/traced?user=alice"), "url.full is the cache key's URI: \(uri)")
            let status = try #require(text(decision, HTTPCacheTracing.Attribute.cacheStatus))
            #expect(status.contains("fwd=uri-miss"), "\(status)")

            let fetch = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.originFetch })
            #expect(fetch.kind == .client)
            #expect(fetch.parentSpanID == decision.spanID)
            #expect(fetch.attributes.get(HTTPCacheTracing.Attribute.responseStatusCode) == 200)
            #expect(fetch.status?.code != .error)

            let store = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.store })
            #expect(store.parentSpanID == decision.spanID)
            #expect(store.attributes.get(HTTPCacheTracing.Attribute.stored) == true)

            // The trace went on to the origin with the request (the tracer's own propagation).
            #expect(tracer.performedContextInjections.contains { !$0.values.isEmpty })

            tracer.clearFinishedSpans()
            let hit = try await h.get("/traced?user=alice")
            #expect(hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"))
            #expect(tracer.finishedSpans.allSatisfy { $0.operationName != HTTPCacheTracing.SpanName.originFetch })
            #expect(h.origin.requestCount == 1, "the hit did not reach the origin")
        }
    }

    @Test("credentials in a query string reach no span: url.path has no query, url.full has them REDACTED")
    func queryCredentialsRedacted() async throws {
        let tracer = InMemoryTracer()
        try await ProxyHarness.run(configure: { $0.tracer = tracer }, script: versioned(maxAge: 60, prefix: "v")) { h in
            let reply = try await h.get("/signed?page=2&access_token=SECRET1&X-Amz-Signature=SECRET2&Sig=SECRET3")
            #expect(reply.text == "v1")
            let spans = try await finishedSpans(of: tracer, including: ProxyTracing.SpanName.request)
            #expect(!spans.isEmpty)
            for span in spans {
                span.attributes.forEach { key, attribute in
                    #expect(!"\(attribute)".contains("SECRET"), "\(span.operationName) \(key): \(attribute)")
                }
            }
            let request = try #require(spans.first { $0.operationName == ProxyTracing.SpanName.request })
            #expect(text(request, ProxyTracing.Attribute.urlPath) == "/signed", "OpenTelemetry's url.path has no query")
            let decision = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.respond })
            let uri = try #require(text(decision, HTTPCacheTracing.Attribute.urlFull))
            #expect(
                uri.hasSuffix("/signed?page=2&access_token=REDACTED&X-Amz-Signature=REDACTED&Sig=REDACTED"),
                "\(uri)"
            )
        }
    }

    @Test(
        "redaction: userinfo and the credential parameters go, everything else stays as it was",
        arguments: [
            ("https://user:pw@example.com/a?b=1", "https://REDACTED:REDACTED@example.com/a?b=1"),
            ("https://a@b@example.com?sig=x", "https://REDACTED:REDACTED@example.com?sig=REDACTED"),
            (
                "http://example.com/p?token=t&x&=y&key=&k%65y=z#token=f",
                "http://example.com/p?token=REDACTED&x&=y&key=REDACTED&k%65y=REDACTED#token=f"
            ),
            ("http://example.com/@user?q=1", "http://example.com/@user?q=1"),
            ("/relative?apikey=1", "/relative?apikey=REDACTED"),
            ("no uri at all", "no uri at all"),
        ]
    )
    func redaction(uri: String, expected: String) {
        #expect(HTTPCacheTracing.redacted(uri) == expected)
    }

    @Test("an origin that cannot be reached: the error is recorded and the spans' status is error")
    func failingOrigin() async throws {
        let tracer = InMemoryTracer()
        try await ProxyHarness.run(
            originDown: true,
            configure: { $0.tracer = tracer },
            script: { _ in .init(body: "never") }
        ) { h in
            let reply = try await h.get("/down")
            #expect(reply.status == 502)
            let spans = try await finishedSpans(of: tracer, including: ProxyTracing.SpanName.request)

            let fetch = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.originFetch })
            #expect(fetch.status?.code == .error)
            #expect(!fetch.errors.isEmpty)
            let decision = try #require(spans.first { $0.operationName == HTTPCacheTracing.SpanName.respond })
            #expect(decision.status?.code == .error)
            #expect(!decision.errors.isEmpty)
            let request = try #require(spans.first { $0.operationName == ProxyTracing.SpanName.request })
            #expect(request.status?.code == .error)
            #expect(!request.errors.isEmpty)
            #expect(request.attributes.get(HTTPCacheTracing.Attribute.responseStatusCode) == 502)
        }
    }

    @Test("a traceparent from the client is continued: the proxy's span joins the client's trace")
    func extractsClientContext() async throws {
        let tracer = InMemoryTracer()
        try await ProxyHarness.run(configure: { $0.tracer = tracer }, script: versioned(maxAge: 60, prefix: "v")) { h in
            _ = try await h.get(
                "/joined",
                headers: [(InMemoryTracer.traceIDKey, "client-trace"), (InMemoryTracer.spanIDKey, "client-span")]
            )
            let spans = try await finishedSpans(of: tracer, including: ProxyTracing.SpanName.request)
            let request = try #require(spans.first { $0.operationName == ProxyTracing.SpanName.request })
            #expect(request.traceID == "client-trace")
            #expect(request.parentSpanID == "client-span")
        }
    }

    /// The string attribute `key` of `span`.
    private func text(_ span: FinishedInMemorySpan, _ key: String) -> String? {
        if case .string(let value)? = span.attributes.get(key) { return value }
        return nil
    }

    /// The finished spans once one named `name` has finished (the server's span ends once the
    /// response head is handed over, which may be just after the client has read the reply).
    private func finishedSpans(of tracer: InMemoryTracer, including name: String) async throws -> [FinishedInMemorySpan]
    {
        try await eventually { tracer.finishedSpans.contains { $0.operationName == name } }
        return tracer.finishedSpans
    }
}
