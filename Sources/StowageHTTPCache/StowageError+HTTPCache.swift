import StowageCore

extension HTTPCache {
    /// The miss of a request whose policy forbids loading (`returnCacheDataDontLoad`).
    static func notCachedError(_ key: CacheKey) -> StowageError {
        StowageError(
            code: .notCached,
            message: "no stored response for \(key.uri) and the policy returnCacheDataDontLoad forbids loading it; "
                + "load it once with another policy while online"
        )
    }
}

extension StowageError {
    /// A body that is longer than the caller's collect limit.
    static func bodyTooLarge(limit: Int) -> StowageError {
        StowageError(
            code: .tooLarge,
            message: "the body is longer than \(limit) bytes; stream it instead of collecting it"
        )
    }
}
