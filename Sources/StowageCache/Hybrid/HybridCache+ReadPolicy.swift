import Foundation
import StowageCore

extension HybridCache {
    /// When ``value(forKey:timeToLive:policy:orLoad:)`` uses the cache and when it loads, with
    /// the meanings of `URLRequest.CachePolicy` for `URLCache`.
    ///
    /// ```swift
    /// // Pull to refresh: always download, and keep what came.
    /// let feed = try await cache.value(forKey: url, policy: .reloadIgnoringCache) { try await download(url) }
    /// // Offline: what is cached or nothing (throws `.notFound`).
    /// let saved = try await cache.value(forKey: url, policy: .returnCacheDontLoad) { try await download(url) }
    /// // Conditional request: the cached value carries its ETag.
    /// let fresh = try await cache.value(
    ///     forKey: url,
    ///     policy: .revalidate { cached in
    ///         let response = try await download(url, ifNoneMatch: cached.etag)
    ///         return response.status == 304 ? .notModified : .modified(response.feed)
    ///     },
    ///     orLoad: { try await download(url).feed }
    /// )
    /// ```
    public enum ReadPolicy: Sendable {
        /// Use the cached value; load (and store) on a miss. The default, as
        /// `.returnCacheDataElseLoad`; concurrent loads of a key are shared.
        case useCacheElseLoad
        /// Always load and store the result, even when a value is cached, as
        /// `.reloadIgnoringLocalCacheData`. The cached value stays if the load fails.
        case reloadIgnoringCache
        /// Never load: the cached value, or `StowageError` with code `.notFound` on a miss, as
        /// `.returnCacheDataDontLoad` fails a request it has nothing for ("offline mode").
        /// ``value(forKey:)`` is the same read with an optional result.
        case returnCacheDontLoad
        /// Ask the source whether the cached value is still current before using it, as
        /// `.reloadRevalidatingCacheData`; load on a miss.
        ///
        /// The closure receives the cached value, which carries whatever validator it needs (an
        /// ETag, a version, a modification date), and answers ``Revalidation/notModified``
        /// to keep it or ``Revalidation/modified(_:)`` with the newer value, which is stored.
        /// A kept value is stored again when the call gives a `timeToLive`, so that its
        /// lifetime starts over, as a `304 Not Modified` freshens a stored response
        /// (RFC 9111 §4.3.4). A failing revalidation is thrown and leaves the cached value.
        case revalidate(@Sendable (_ cached: Value) async throws -> Revalidation)
    }

    /// What a ``ReadPolicy/revalidate(_:)`` check found.
    public enum Revalidation: Sendable {
        /// The cached value is current: keep it (HTTP's `304 Not Modified`).
        case notModified
        /// The source has a newer value: store and return it.
        case modified(Value)
    }

    /// ``value(forKey:timeToLive:policy:orLoad:)`` for every policy but the default's memory hit.
    @usableFromInline
    func value(
        forKey key: String,
        timeToLive: Duration?,
        following policy: ReadPolicy,
        load: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        switch policy {
        case .useCacheElseLoad:
            return try await loadOnce(key: key, timeToLive: timeToLive, load: load)
        case .reloadIgnoringCache:
            // Not joined to a load in flight: that one may be about to return the cached value.
            let loaded = try await load()
            try await setValue(loaded, forKey: key, timeToLive: timeToLive)
            return loaded
        case .returnCacheDontLoad:
            if let cached = try await value(forKey: key) { return cached }
            throw StowageError(
                code: .notFound,
                message: "no cached value for '\(key)', and the read policy returnCacheDontLoad does not load; "
                    + "use .useCacheElseLoad to load on a miss, or value(forKey:) for an optional result"
            )
        case .revalidate(let revalidate):
            let mark = levels.beginRead()
            guard let cached = try await value(forKey: key) else {
                return try await loadOnce(key: key, timeToLive: timeToLive, load: load)
            }
            switch try await revalidate(cached) {
            case .notModified:
                if let timeToLive, try await stillHolds(cached, forKey: key, unchangedSince: mark) {
                    try await setValue(cached, forKey: key, timeToLive: timeToLive)
                }
                return cached
            case .modified(let newer):
                try await setValue(newer, forKey: key, timeToLive: timeToLive)
                return newer
            }
        }
    }

    /// Whether the cache still holds `cached` for `key`: a kept value is stored again only then,
    /// or freshening it would bring back a copy that was removed, or overwrite a newer value,
    /// while the source was being asked.
    private func stillHolds(
        _ cached: Value,
        forKey key: String,
        unchangedSince mark: CacheLevels<Value>.ReadMark
    ) async throws -> Bool {
        // Nothing was removed or written through this cache, no handle cleared the disk cache,
        // and no other handle removed a value (another process's sign-out, say), since the read:
        // no need to compare.
        if levels.isUnchanged(since: mark) { return true }
        guard let current = try await value(forKey: key) else { return false }
        return try serializer.encode(current) == serializer.encode(cached)
    }
}
