import Tracing

extension Tracer {
    /// `withAnySpan(_:ofKind:_:)`, except on a `NoOpTracer` (no tracer bootstrapped, none given):
    /// then `operation` runs alone with a span that records nothing. Starting a no-op span and
    /// binding it as the task-local context costs about a microsecond on this project's
    /// machines (the bench runner's `tracing.noop-span` row), a tenth of a disk hit; a type
    /// check costs nothing.
    ///
    /// - Parameters:
    ///   - operationName: The span's name.
    ///   - context: The parent context; `nil` for the task's current one.
    ///   - kind: The span's kind.
    ///   - operation: The work, given the span to annotate.
    package func withSpanIfTracing<T>(
        _ operationName: String,
        context: ServiceContext? = nil,
        ofKind kind: SpanKind = .internal,
        _ operation: (any Tracing.Span) async throws -> T
    ) async rethrows -> T {
        if self is NoOpTracer { return try await operation(silentSpan) }
        if let context { return try await withAnySpan(operationName, context: context, ofKind: kind, operation) }
        return try await withAnySpan(operationName, ofKind: kind, operation)
    }
}

/// The span `withSpanIfTracing` hands an operation when nothing is traced.
private let silentSpan: any Tracing.Span = NoOpTracer.NoOpSpan(context: .topLevel)
