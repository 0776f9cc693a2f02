import Tracing

extension Span {
    /// Records the attributes every cache span carries: the cache's name and the key's length
    /// (never the key: it may hold user data).
    package func recordCacheKey(_ key: String, cacheName: String?) {
        guard isRecording else { return }
        attributes[CacheTracing.Attribute.keyLength] = key.utf8.count
        if let cacheName { attributes[CacheTracing.Attribute.cacheName] = cacheName }
    }
}
