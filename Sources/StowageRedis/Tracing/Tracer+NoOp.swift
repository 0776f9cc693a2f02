import Tracing

extension Tracer {
    /// `withAnySpan(_:ofKind:_:)`, except on a `NoOpTracer` (no tracer bootstrapped, none given):
    /// then `operation` runs alone with a span that records nothing. A no-op span bound as the
    /// task-local context costs about a microsecond (the bench runner's `tracing.noop-span`),
    /// a tenth of a round trip to a local Redis; a type check costs nothing.
    func withSpanIfTracing<T>(
        _ operationName: String,
        ofKind kind: SpanKind = .internal,
        _ operation: (any Tracing.Span) async throws -> T
    ) async rethrows -> T {
        if self is NoOpTracer { return try await operation(silentSpan) }
        return try await withAnySpan(operationName, ofKind: kind, operation)
    }
}

/// The span `withSpanIfTracing` hands an operation when nothing is traced.
private let silentSpan: any Tracing.Span = NoOpTracer.NoOpSpan(context: .topLevel)
