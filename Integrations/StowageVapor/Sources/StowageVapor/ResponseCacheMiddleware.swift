import HTTPTypes
import StowageHTTPCache
import Vapor

/// Caches a Vapor application's responses in-process, in a shared RFC 9111 cache
/// (`HTTPCache`): the responders behind it are the origin, and the caching proxy's rules apply
/// (Vary, `Cache-Control` and `CDN-Cache-Control`, validators and 304s, request collapsing,
/// `stale-while-revalidate` refreshed in the background, invalidation by URL, prefix and tag,
/// `Cache-Status`).
///
/// ```swift
/// let cache = try HTTPCache(
///     directory: URL(filePath: "/var/cache/my-app"),
///     configuration: HTTPCache.Configuration(kind: .shared, name: "my-app"))
/// app.middleware.use(try ResponseCacheMiddleware(cache: cache))
/// ```
///
/// Only what a responder allows is stored: `private` and `Set-Cookie` responses are never
/// given to another client, nor is a response to a request with a `Cookie` unless it is
/// `public`, has `s-maxage` or `CDN-Cache-Control`, or varies on `Cookie`. Request bodies go to the responder as sent. A cached answer streams
/// to the client; a responder's body built with `Response.Body(stream:)` or
/// `Response.Body(asyncStream:)` is collected before the cache reads it, since Vapor does not
/// let anything but its own server read such a body as it is written. Because of that, a plain
/// `asyncStream` callback that throws without writing `.error` leaves Vapor's collecting promise
/// unfulfilled (a debug build stops with "leaking promise"), and a stream that never writes
/// `.end` never completes: use `Response.Body(managedAsyncStream:)`, or leave such routes alone
/// with `ServerResponseCache.Configuration.passesThrough`.
///
/// Vapor's server adds its own `Date` to every response it writes, so an answer from the cache
/// goes out with that one (the time of sending) instead of the stored response's, which would
/// make two: how long the cache has held it is in `Age` (RFC 9111 §4.2.3).
public struct ResponseCacheMiddleware: AsyncMiddleware {
    /// The cache and what it keys on.
    public let responses: ServerResponseCache

    /// Puts `cache` in front of the responders after this middleware.
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
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let head = request.httpRequest
        let hasBody = head.method != .get && head.method != .head
        let answer = try await responses.respond(to: head, body: nil) { forwarded, _ in
            // A request with a body goes to the responder as it came, its body unread; the
            // others as the cache asks (its validators, ignored query parameters removed).
            let origin = hasBody ? request : request.forwarding(forwarded)
            let response = try await next.respond(to: origin)
            return try await response.originResponse(on: request.eventLoop)
        }
        guard let answer else { return try await next.respond(to: request) }
        return Response(answering: answer, allocator: request.byteBufferAllocator)
    }
}
