/// The names and attribute keys of the spans an ``HTTPCache`` records through
/// swift-distributed-tracing. They are stable: dashboards and alerts may match on them.
///
/// Each answer of ``HTTPCache/respond(to:body:policy:fetch:)`` that is not a memory hit records
/// one ``SpanName/respond`` span; under it, ``SpanName/originFetch`` (kind `client`) for each
/// request to the origin and ``SpanName/store`` for the decision to store its response, and
/// the cache levels' own spans (`CacheTracing` in StowageCache): `stowage.cache.get` for each read
/// of a record or body that misses memory, with its disk and shared-level reads under it, and
/// shared-level writes. A memory hit records nothing and makes no tracing call.
///
/// Attributes follow OpenTelemetry's HTTP semantic conventions where they have one
/// (`http.request.method`, `http.response.status_code`, `url.full`); `url.full` is the cache
/// key's URI (the request's URL without the query parameters the key rules ignore), with the
/// credentials a URL may carry redacted (``redacted(_:)``), as OpenTelemetry asks of `url.full`.
public enum HTTPCacheTracing {
    /// Span names.
    public enum SpanName {
        /// One cache decision and its effects, until the response head is ready.
        public static let respond = "stowage.http_cache.respond"
        /// One request to the origin, until its response head arrived (the body streams later).
        public static let originFetch = "stowage.http_cache.origin_fetch"
        /// The decision to store an origin's response and, for a body read whole, the store.
        public static let store = "stowage.http_cache.store"
    }

    /// Attribute keys.
    public enum Attribute {
        /// OpenTelemetry `http.request.method`: the request's method, a string.
        public static let requestMethod = "http.request.method"
        /// OpenTelemetry `http.response.status_code`: the status answered, an integer.
        public static let responseStatusCode = "http.response.status_code"
        /// OpenTelemetry `url.full`: the cache key's URI with credentials redacted, a string.
        public static let urlFull = "url.full"
        /// How the cache answered: a ``CacheOutcome`` raw value (`hit`, `miss`, `revalidated`,
        /// `stale`, `bypass`), a string; a response the rules refused to store is a `miss`
        /// whose ``SpanName/store`` span says `stowage.cache.stored = false`.
        public static let outcome = "stowage.cache.outcome"
        /// The RFC 9211 `Cache-Status` value the answer carries, a string.
        public static let cacheStatus = "stowage.cache.status"
        /// On ``SpanName/store``: whether a store committed or is under way, a boolean.
        public static let stored = "stowage.cache.stored"
    }
}
