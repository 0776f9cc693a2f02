/// The names and attribute keys of the spans a ``CachingProxy`` records through
/// swift-distributed-tracing. They are stable: dashboards and alerts may match on them.
///
/// Each request that is not a memory hit answered on the event loop records one
/// ``SpanName/request`` span of kind `server`; the HTTP cache's spans (`HTTPCacheTracing` in
/// StowageHTTPCache) hang under it, so one proxied miss gives the tree
/// `stowage.proxy.request` → `stowage.http_cache.respond` → `stowage.http_cache.origin_fetch`
/// and `stowage.http_cache.store`. A memory hit on the event loop records nothing and makes no
/// tracing call.
///
/// The attributes are OpenTelemetry's HTTP server ones: `http.request.method`, ``Attribute/urlPath``
/// and `http.response.status_code`, with the cache's `stowage.cache.outcome`; a 5xx answer marks
/// the span as an error, and an upstream failure is recorded on it.
public enum ProxyTracing {
    /// Span names.
    public enum SpanName {
        /// One client request, until the response head is ready (the body streams later).
        public static let request = "stowage.proxy.request"
    }

    /// Attribute keys beyond the HTTP cache's (`HTTPCacheTracing.Attribute`).
    public enum Attribute {
        /// OpenTelemetry `url.path`: the path the client asked for, without the query (which
        /// may carry a credential; the cache's `url.full` has it, redacted), a string.
        public static let urlPath = "url.path"
    }
}
