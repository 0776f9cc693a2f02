import StowageCore

extension HTTPCache.Configuration {
    /// A private cache with the figures and storage rule `NSURLCache` is documented with; opt in
    /// where an app moving from `URLCache` should see the same things stored.
    ///
    /// - ``memoryCapacity``: 2 MB (2 × 1024 × 1024 bytes), the AFNetworking caching write-up's
    ///   `[[NSURLCache alloc] initWithMemoryCapacity:2 * 1024 * 1024 …]` ("2mb of memory").
    ///   Apps choose other figures (another write-up's app-delegate code uses 20 MB), and
    ///   `URLCache.shared` itself starts smaller, with platform-dependent capacities that are
    ///   not documented figures; this preset takes the documented set-up.
    /// - ``diskCapacity``: 100 MB (100 × 1024 × 1024 bytes), `diskCapacity:100 * 1024 * 1024`
    ///   in both write-ups ("100mb of disk space").
    /// - ``maximumEntryFraction``: 0.05, URLSession's `willCacheResponse` documentation: a
    ///   response is cached only if it is "no larger than about 5% of the disk cache size"; here
    ///   it is applied to each tier, so bodies over 104 857 bytes skip memory and bodies over
    ///   5 242 880 bytes are not stored. ``maximumBodySize`` stays `nil`: there is no other cap.
    /// - ``rules`` ``CacheRules/heuristicFreshness``: `false`, NSURLCache's rule as the AFNetworking write-up states
    ///   it: "Either the Cache-Control header or the Expires header MUST be in the HTTP
    ///   response header from the server in order for the client to cache it".
    /// - ``rules`` ``CacheRules/kind``: ``CacheKind/private``, as `URLCache` is a client's cache.
    ///
    /// Every other property keeps the default of ``init(kind:name:)``.
    ///
    /// ```swift
    /// var configuration = HTTPCache.Configuration.urlCache
    /// configuration.willCache = { proposal in … }
    /// let cache = try await HTTPCache.open(directory: caches.appending(path: "http"), configuration: configuration)
    /// ```
    public static var urlCache: HTTPCache.Configuration {
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.memoryCapacity = ByteCount(2 * 1024 * 1024)
        configuration.diskCapacity = ByteCount(100 * 1024 * 1024)
        configuration.maximumEntryFraction = 0.05
        configuration.maximumBodySize = nil
        configuration.rules.heuristicFreshness = false
        return configuration
    }
}
