import Hummingbird
import StowageHTTPCache

/// A Hummingbird responder that answers from a shared RFC 9111 cache (`HTTPCache`) in front
/// of another responder, usually a router's: ``ResponseCacheMiddleware``'s behaviour, for the
/// whole application.
///
/// Unlike the middleware it can call the responder after a response went out, so
/// `stale-while-revalidate` refreshes run in the background as the caching proxy's do.
///
/// ```swift
/// let app = Application(
///     responder: try ResponseCacheResponder(cache: cache, responder: router.buildResponder()))
/// ```
public struct ResponseCacheResponder<Responder: HTTPResponder>: HTTPResponder
where Responder.Context: Sendable {
    /// The request context the responder takes.
    public typealias Context = Responder.Context

    /// The cache and what it keys on.
    public let responses: ServerResponseCache
    /// The responder behind the cache: the origin.
    public let responder: Responder

    /// Puts `cache` in front of `responder`.
    ///
    /// - Parameters:
    ///   - cache: A shared cache (`HTTPCache.Configuration(kind: .shared)`).
    ///   - configuration: The scheme and host to key on when a request has none, and the
    ///     requests to leave alone. Default: `http`, the request's `Host`, none.
    ///   - responder: The responder behind the cache.
    /// - Throws: `StowageError` `.invalidConfiguration` when `cache` is private.
    public init(
        cache: HTTPCache,
        configuration: ServerResponseCache.Configuration = .init(),
        responder: Responder
    ) throws {
        responses = try ServerResponseCache(cache: cache, configuration: configuration)
        self.responder = responder
    }

    /// Answers `request` from the cache, or through the responder and stores what it may.
    @Sendable public func respond(to request: Request, context: Context) async throws -> Response {
        try await responses.response(to: request, context: context, handler: responder.respond)
    }
}
