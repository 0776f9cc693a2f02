import AsyncHTTPClient
import Foundation
import HTTPTypes
import StowageCookies
import StowageCore
import StowageHTTPCache
import Synchronization

/// An HTTP client with a private RFC 9111 cache: AsyncHTTPClient underneath, `HTTPCache`
/// in front, `URLCache`'s request policies per call.
///
/// ```swift
/// let cache = try await HTTPCache.open(directory: caches.appending(path: "http"))
/// let client = CachingHTTPClient(cache: cache)
/// defer { try? await client.shutdown() }
/// let request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/feed")
/// let served = try await client.execute(request, policy: .useProtocolCachePolicy)
/// print(served.outcome)                         // .miss, then .hit while fresh
/// let bytes = try await served.body.collect(upTo: 10 << 20)
/// ```
///
/// Conditional requests are built by the cache; a 304 reaches the caller only if the caller's
/// request was conditional itself. `CachedResponse/status` carries the same facts the proxy
/// sends as `Cache-Status`.
///
/// Which cache, as a `URLSession` picks its `urlCache`:
/// - no `cache` argument: `HTTPCache.shared` as it is when the client is created (memory only
///   unless the app set another at launch), as sessions use `URLCache.shared` by default;
/// - `cache: nil`: no cache at all, as a session configuration whose `urlCache` is `nil`: every
///   request goes to the origin and nothing is stored (the outcome is `miss`, or `bypass`
///   for unsafe methods; `returnCacheDataDontLoad` throws `.notCached`);
/// - a cache of your own, including a disabled one (both capacities 0), which behaves as `nil`.
///
/// Cookies, as a `URLSession` with an `httpCookieStorage`: with a `CookieStore` the client adds
/// the matching cookies to each request's `Cookie` field (after any the caller set) before the
/// cache sees it, so `Vary: Cookie` is judged on what is sent; and it stores the `Set-Cookie`
/// fields of every response that comes from the origin, 304s of revalidations included. A
/// response served from the cache never sets cookies again: a shared cache does not store
/// `Set-Cookie` at all, and a private cache may keep it in the stored response (the caller
/// still sees it) but replaying it would bring back cookies the server has since changed or
/// deleted. With an AsyncHTTPClient of your own that follows redirects, each response's
/// `Set-Cookie` is scoped to the URL it answered (the redirect's host, then the target's), and
/// AsyncHTTPClient drops the `Cookie` field on a redirect to another origin. Without a store
/// (the default) no cookie is sent or kept, as before.
///
/// The client is a swift-service-lifecycle `Service`: in a `ServiceGroup` its ``run()`` ends on
/// the group's graceful shutdown and shuts down the AsyncHTTPClient it created; outside one,
/// call ``shutdown()`` when done.
public final class CachingHTTPClient: Sendable {
    /// The cache (configure it as `CacheKind/private` for a client); `nil` when the client
    /// passes every request through.
    public let cache: HTTPCache?
    /// What requests go through: ``cache``, or without one a disabled cache (nothing stored,
    /// every request to the origin), so the request policies mean the same either way.
    private let route: HTTPCache
    /// The transport to origins.
    public let transport: UpstreamTransport
    private let ownsClient: Bool
    /// Set by the first ``shutdown()``; later calls (``run()``'s after the caller's) do nothing.
    private let isShutDown = Atomic<Bool>(false)
    /// The cookie store requests and responses go through; `nil` for none.
    public let cookies: CookieStore?

    /// A client over `cache`.
    ///
    /// - Parameters:
    ///   - cache: Where responses are stored. Default `HTTPCache.shared` (read now, kept for the
    ///     client's life); `nil` for none: every request goes to the origin.
    ///   - cookies: The cookies to send and keep (e.g. `UserSpace/cookies(configuration:)`).
    ///     Default `nil`: no cookies are sent or stored. Give each user's client a cache of its
    ///     own (`UserSpace`'s caches directory) as well: a private cache serves what it stored
    ///     to every client that shares it, and a response personalised by a cookie without
    ///     `Vary: Cookie` would reach another user through a shared `HTTPCache.shared`, as
    ///     through `URLCache.shared`.
    ///   - httpClient: The AsyncHTTPClient to use; `nil` creates one (redirects off, so 3xx
    ///     responses are cached as such) that ``shutdown()`` closes.
    ///   - timeout: The longest one origin exchange may take, body included. Default 60 s.
    public init(
        cache: HTTPCache? = HTTPCache.shared,
        cookies: CookieStore? = nil,
        httpClient: HTTPClient? = nil,
        timeout: Duration = .seconds(60)
    ) {
        self.cache = cache
        self.cookies = cookies
        route = cache ?? Self.passThrough
        ownsClient = httpClient == nil
        transport = UpstreamTransport(
            client: httpClient ?? UpstreamTransport.makeClient(readTimeout: timeout),
            timeout: timeout
        )
    }

    /// Sends `request` through the cache.
    ///
    /// - Parameters:
    ///   - request: An absolute request: `scheme`, `authority` and `path` set.
    ///   - body: A body for methods that have one.
    ///   - policy: How this request uses the cache; default RFC 9111's own rules.
    /// - Returns: The response, its streamed body and how it was served (hit, miss,
    ///   revalidated, stale, bypass).
    /// - Throws: `StowageError` `.notCached` for a miss under
    ///   `RequestCachePolicy/returnCacheDataDontLoad`; AsyncHTTPClient's errors when the origin
    ///   cannot be reached and no stale response may stand in.
    public func execute(
        _ request: HTTPRequest,
        body: HTTPBody? = nil,
        policy: RequestCachePolicy = .useProtocolCachePolicy
    ) async throws -> CachedResponse {
        guard let cookies, let url = URL(string: UpstreamTransport.url(of: request)) else {
            return try await route.respond(to: request, body: body, policy: policy, fetch: transport.asFetch)
        }
        var request = request
        if let header = cookies.cookieHeader(for: url) {
            // RFC 6265 §5.4: one Cookie field; the caller's own cookies first.
            let own = request.headerFields[values: .cookie]
            request.headerFields[.cookie] = (own + [header]).joined(separator: "; ")
        }
        let transport = self.transport
        return try await route.respond(to: request, body: body, policy: policy) { sent, body in
            let (response, responseBody, hops) = try await transport.fetchWithHops(sent, body: body)
            // Each response's Set-Cookie is scoped to the URL that response answered: with an
            // AsyncHTTPClient that follows redirects, the final response may come from another
            // host, which must not set cookies for the first (RFC 6265 §5.3 steps 5–6), and the
            // redirects' own Set-Cookie fields count too, as in browsers.
            for hop in hops {
                let setCookies = hop.fields[values: .setCookie]
                guard !setCookies.isEmpty, let hopURL = hop.url else { continue }
                // Refused cookies are ignored, as RFC 6265 §5.3 says. A file that cannot be
                // written does not fail the exchange: the cookies are set in memory, and the
                // store's next write carries them.
                _ = try? await cookies.setCookies(setCookies, from: hopURL)
            }
            return (response, responseBody)
        }
    }

    /// The disabled cache of clients without one: `URLCache(memoryCapacity: 0, diskCapacity: 0)`.
    private static let passThrough: HTTPCache = {
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.memoryCapacity = ByteCount(0)
        configuration.diskCapacity = ByteCount(0)
        do {
            return try HTTPCache(directory: nil, configuration: configuration)
        } catch {
            preconditionFailure("a disabled HTTP cache could not be made: \(error)")
        }
    }()

    /// Shuts down the AsyncHTTPClient if this client created it; once, however often it is called
    /// (``run()`` calls it when its service group shuts down).
    public func shutdown() async throws {
        guard ownsClient, !isShutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try await transport.client.shutdown()
    }
}
