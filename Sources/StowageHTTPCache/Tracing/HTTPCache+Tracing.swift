import HTTPTypes
import StowageCache
import Tracing

extension HTTPCache {
    /// The request's attributes on a ``HTTPCacheTracing/SpanName/respond`` span.
    func recordRequest(_ request: HTTPRequest, on span: any Span) {
        span.attributes[HTTPCacheTracing.Attribute.requestMethod] = request.method.rawValue
        span.attributes[HTTPCacheTracing.Attribute.urlFull] = HTTPCacheTracing.redacted(rules.key(for: request).uri)
    }

    /// The answer's attributes on a ``HTTPCacheTracing/SpanName/respond`` span.
    func recordAnswer(_ served: CachedResponse, on span: any Span) {
        span.attributes[HTTPCacheTracing.Attribute.outcome] = served.outcome.rawValue
        span.attributes[HTTPCacheTracing.Attribute.cacheStatus] = served.status.description
        span.attributes[HTTPCacheTracing.Attribute.responseStatusCode] = served.response.status.code
    }

    /// `fetch(request, body)` in a ``HTTPCacheTracing/SpanName/originFetch`` span of kind
    /// `client`; a failure is recorded on it and marks it as an error, as is a 5xx answer
    /// (OpenTelemetry's rule for client spans).
    func fetchTraced(
        _ request: HTTPRequest,
        body: HTTPBody?,
        through fetch: HTTPFetch
    ) async throws -> (HTTPResponse, HTTPBody) {
        try await levels.activeTracer.withSpanIfTracing(HTTPCacheTracing.SpanName.originFetch, ofKind: .client) {
            span in
            if span.isRecording {
                span.attributes[HTTPCacheTracing.Attribute.requestMethod] = request.method.rawValue
                span.attributes[HTTPCacheTracing.Attribute.urlFull] = HTTPCacheTracing.redacted(
                    rules.key(for: request).uri
                )
            }
            let (response, responseBody) = try await fetch(request, body)
            if span.isRecording {
                span.attributes[HTTPCacheTracing.Attribute.responseStatusCode] = response.status.code
                if response.status.kind == .serverError { span.setStatus(SpanStatus(code: .error)) }
            }
            return (response, responseBody)
        }
    }

    /// ``storeIfAllowed(_:for:key:onDone:)`` in a ``HTTPCacheTracing/SpanName/store`` span.
    func storeIfAllowedTraced(
        _ exchanged: OriginExchange,
        for request: HTTPRequest,
        key: CacheKey,
        onDone: @escaping @Sendable (Bool) -> Void
    ) async throws -> StoreOutcome {
        try await levels.activeTracer.withSpanIfTracing(HTTPCacheTracing.SpanName.store) { span in
            let outcome = try await storeIfAllowed(exchanged, for: request, key: key, onDone: onDone)
            if span.isRecording { span.attributes[HTTPCacheTracing.Attribute.stored] = outcome.isUnderWay }
            return outcome
        }
    }
}
