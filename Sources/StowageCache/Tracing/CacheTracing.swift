/// The names and attribute keys of the spans a ``HybridCache`` (and the levels it shares with
/// the HTTP cache, whose reads of records and bodies below memory record the same spans) records
/// through swift-distributed-tracing. They are stable: dashboards and
/// alerts may match on them.
///
/// A read served by memory records nothing: the memory hit is the sub-microsecond path, and
/// it makes no tracing call at all (not even a look at the task-local context). A read that
/// misses memory records one ``SpanName/get`` span, with ``SpanName/diskRead`` and
/// ``SpanName/sharedRead`` spans under it; writes record ``SpanName/diskWrite`` and
/// ``SpanName/sharedWrite``.
///
/// Keys may hold user data (a URL with a query, an account name), so no span carries a key:
/// only its length in UTF-8 bytes (``Attribute/keyLength``).
public enum CacheTracing {
    /// Span names.
    public enum SpanName {
        /// A read that missed memory: from `HybridCache.value(forKey:)` (and the loading read
        /// of `value(forKey:timeToLive:policy:orLoad:)`) until it returns.
        public static let get = "stowage.cache.get"
        /// The disk level's read of one key (the index lookup and the file read).
        public static let diskRead = "stowage.cache.disk.read"
        /// The shared level's read of one key (one round trip, e.g. to Redis).
        public static let sharedRead = "stowage.cache.shared.read"
        /// A write of one key to the disk level (or, for a memory-only write, the removal of
        /// the older disk copy).
        public static let diskWrite = "stowage.cache.disk.write"
        /// A write of one key to the shared level.
        public static let sharedWrite = "stowage.cache.shared.write"
    }

    /// Attribute keys.
    public enum Attribute {
        /// The cache's name (the disk cache's `Configuration.name`), a string.
        public static let cacheName = "stowage.cache.name"
        /// The key's length in UTF-8 bytes, an integer; never the key itself.
        public static let keyLength = "stowage.cache.key.length"
        /// On ``SpanName/get``: the level that answered, `"disk"` or `"shared"`; absent on a miss.
        public static let level = "stowage.cache.level"
        /// Whether the read found the key, a boolean.
        public static let hit = "stowage.cache.hit"
        /// The bytes read or written (the encoded value), an integer.
        public static let bytes = "stowage.cache.bytes"
    }

    /// The values of ``Attribute/level``.
    public enum Level {
        /// The disk level answered.
        public static let disk = "disk"
        /// The shared level answered.
        public static let shared = "shared"
    }
}
