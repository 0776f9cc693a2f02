import HTTPTypes
import Tracing

/// Reads trace context (W3C `traceparent`, `tracestate`) from a request's fields, for
/// `Tracer.extract`.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        return fields[name]
    }
}

/// Writes trace context into a request's fields, for `Tracer.inject`; a value the tracer gives
/// again replaces the earlier one.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
