import Tracing

extension CacheLevels {
    /// The tracer for one operation: the one the levels were given, else the process's
    /// (`InstrumentationSystem.tracer`, a no-op tracer until one is bootstrapped). Read once
    /// per operation, never on a memory hit.
    package var activeTracer: any Tracer { tracer ?? InstrumentationSystem.tracer }
}

extension Span {
    /// Records the attributes every cache span carries: the cache's name and the key's length
    /// (never the key: it may hold user data).
    package func recordCacheKey(_ key: String, cacheName: String?) {
        guard isRecording else { return }
        attributes[CacheTracing.Attribute.keyLength] = key.utf8.count
        if let cacheName { attributes[CacheTracing.Attribute.cacheName] = cacheName }
    }
}
