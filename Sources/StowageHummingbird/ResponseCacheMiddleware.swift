import HTTPTypes
import Hummingbird
import StowageHTTPCache

/// Caches a Hummingbird application's responses in-process, in a shared RFC 9111 cache
/// (`HTTPCache`): the handlers behind it are the origin, and the caching proxy's rules apply
/// (Vary, `Cache-Control` and `CDN-Cache-Control`, validators and 304s, request collapsing,
/// invalidation by URL, prefix and tag, `Cache-Status`).
///
/// ```swift
/// let cache = try HTTPCache(
///     directory: URL(filePath: "/var/cache/my-app"),
///     configuration: HTTPCache.Configuration(kind: .shared, name: "my-app"))
/// let router = Router()
/// router.add(middleware: try ResponseCacheMiddleware(cache: cache))
/// router.get("/catalog") { _, _ in
///     Response(status: .ok, headers: [.cacheControl: "max-age=60"], body: ...)
/// }
/// ```
///
/// Only what a handler allows is stored: a response without `Cache-Control` freshness (or a
/// validator and heuristics) is not reused, `private` and `Set-Cookie` responses are never
/// given to another client, nor is a response to a request with a `Cookie` unless it is
/// `public`, has `s-maxage` or `CDN-Cache-Control`, or varies on `Cookie`. Bodies stream both ways; request bodies go to the handler as sent.
///
/// A middleware's next handler can only be called while the middleware runs, so a
/// `stale-while-revalidate` refresh that starts after the stale answer went out fails (it is
/// logged at debug level) and the next request after the window revalidates in the
/// foreground. ``ResponseCacheResponder`` wraps the whole responder instead and refreshes in
/// the background.
public struct ResponseCacheMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The cache and what it keys on.
    public let responses: ServerResponseCache

    /// Puts `cache` in front of the handlers after this middleware.
    ///
    /// - Parameters:
    ///   - cache: A shared cache (`HTTPCache.Configuration(kind: .shared)`).
    ///   - configuration: The scheme and host to key on when a request has none, and the
    ///     requests to leave alone. Default: `http`, the request's `Host`, none.
    /// - Throws: `StowageError` `.invalidConfiguration` when `cache` is private.
    public init(cache: HTTPCache, configuration: ServerResponseCache.Configuration = .init()) throws {
        responses = try ServerResponseCache(cache: cache, configuration: configuration)
    }

    /// Answers `request` from the cache, or through `next` and stores what it may.
    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard responses.keyedRequest(for: request.head) != nil else { return try await next(request, context) }
        return try await withoutActuallyEscaping(next) { next in
            let lease = HandlerLease(next)
            do {
                let response = try await responses.response(to: request, context: context) {
                    try await lease.call($0, $1)
                }
                await lease.end()
                return response
            } catch {
                await lease.end()
                throw error
            }
        }
    }
}
