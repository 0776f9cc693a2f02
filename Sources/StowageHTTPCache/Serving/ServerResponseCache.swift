import HTTPTypes

/// A shared ``HTTPCache`` in front of a server's own handlers, as Rack::Cache, Django's cache
/// middleware or ASP.NET Core's output caching are: what the server middlewares
/// (`StowageHummingbird`'s, `StowageVapor`'s) share, framework-neutral.
///
/// The handler is the origin: ``respond(to:body:fetch:)`` answers from the cache or calls
/// `fetch`, which runs the handler, under the caching proxy's rules (Vary,
/// `Cache-Control` and `CDN-Cache-Control`, validators and 304s, request collapsing,
/// `stale-while-revalidate`, invalidation, `Cache-Status`).
///
/// ```swift
/// let responses = try ServerResponseCache(cache: cache)
/// guard let answer = try await responses.respond(to: head, body: nil, fetch: runHandler) else {
///     return try await runHandler(head, nil)   // left alone
/// }
/// ```
public struct ServerResponseCache: Sendable {
    /// What the middleware keys on when a request does not say, and what it leaves alone.
    public struct Configuration: Sendable {
        /// The scheme of the cache key, in place of the request's own. Default `nil`: the
        /// request's scheme (Hummingbird gives `https` when it terminates TLS itself, `http`
        /// otherwise), `http` for a request without one (Vapor's). Say `https` behind a TLS
        /// terminator, so the keys are the URLs clients asked for and `https` invalidations
        /// reach them.
        public var scheme: String?
        /// The host (and port) of the cache key for requests without an authority (no `Host`).
        /// Default `nil`: such requests go to the handler uncached.
        public var authority: String?
        /// Requests the cache leaves alone: they go straight to the handler, and their responses
        /// get no `Cache-Status`. Default none.
        public var passesThrough: @Sendable (HTTPRequest) -> Bool
        /// Adds `Stowage-Cache-Trace` to every cached answer: why the cache answered as it
        /// did, step by step. For debugging; default `false`.
        public var sendsTrace: Bool

        /// The defaults: the request's own scheme and `Host`, nothing left alone, no trace.
        public init() {
            scheme = nil
            authority = nil
            passesThrough = { _ in false }
            sendsTrace = false
        }
    }

    /// What the cache answers: the client's response head (with `Cache-Status`) and its body,
    /// `nil` when the response has none (`HEAD`, 204, 304).
    public struct Answer: Sendable {
        /// The response head to send.
        public var head: HTTPResponse
        /// The body to send, `nil` for none.
        public var body: HTTPBody?
        /// How the cache served it.
        public var outcome: CacheOutcome
    }

    /// The shared cache.
    public let cache: HTTPCache
    /// The configuration.
    public let configuration: Configuration

    /// Puts `cache` in front of a server's handlers.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` when `cache` is private: a server
    ///   answers many clients, and a private cache would give one user's `private` responses to
    ///   the next.
    public init(cache: HTTPCache, configuration: Configuration = Configuration()) throws {
        try cache.configuration.requireShared(
            by: "the response cache's HTTPCache configuration",
            remedy: "open the HTTPCache with HTTPCache.Configuration(kind: .shared)"
        )
        self.cache = cache
        self.configuration = configuration
    }

    /// The request as the cache keys it, `nil` for one left alone: ``Configuration/passesThrough``,
    /// no authority to key on, a second `Host` field, a path with an empty or dot segment
    /// (`//`, `/./`, `/../`), or a `GET` or `HEAD` with content.
    ///
    /// A request with two `Host` fields is one a server must refuse (RFC 9112 §3.2); HTTP/1
    /// servers key on the first and leave the second in the fields, where a handler that reads
    /// it would put another host's links in a response stored for this one. A `GET` or `HEAD`
    /// with content (`Content-Length` other than 0, or `Transfer-Encoding`) has content whose
    /// meaning the cache key does not include (RFC 9110 §9.3.1, §9.3.2): the handler gets it
    /// as sent, and its answer is not shared with requests that sent other content.
    public func keyedRequest(for head: HTTPRequest) -> HTTPRequest? {
        guard !configuration.passesThrough(head) else { return nil }
        guard let authority = head.authority.flatMap({ $0.isEmpty ? nil : $0 }) ?? configuration.authority else {
            return nil
        }
        guard head.headerFields[Self.host] == nil, !Self.hasEmptyOrDotSegment(head.path ?? "/") else { return nil }
        if head.method == .get || head.method == .head, Self.declaresContent(head) { return nil }
        return head.addressed(scheme: configuration.scheme ?? head.scheme ?? "http", authority: authority)
    }

    /// Whether `path` (before its query) has an empty segment (`//`) or a dot segment (`.`,
    /// `..`, RFC 3986 §3.3): routers read such a path as another (Hummingbird's routes `//page`
    /// as `/page`), so a stored copy under it would outlive the invalidation of the URL it
    /// answers as.
    static func hasEmptyOrDotSegment(_ path: String) -> Bool {
        let target = path.prefix { $0 != "?" && $0 != "#" }
        return target.split(separator: "/", omittingEmptySubsequences: false).dropFirst().dropLast().contains {
            $0.isEmpty || $0 == "." || $0 == ".."
        } || target.hasSuffix("/.") || target.hasSuffix("/..")
    }

    /// `Host`: HTTP/1 conversions move the first into the authority; any left is a second.
    private static let host = HTTPField.Name("Host")!

    /// Whether `head` says content follows it (RFC 9112 §6.1, §6.2).
    static func declaresContent(_ head: HTTPRequest) -> Bool {
        if head.headerFields[.transferEncoding] != nil { return true }
        return head.headerFields[values: .contentLength].contains { $0.trimmingPrefix(while: { $0 == " " }) != "0" }
    }

    /// Answers `head` from the cache or through `fetch` (the handler), `nil` when the request
    /// is left alone and the caller runs its handler itself.
    ///
    /// `fetch` gets the request as the handler should see it: the cache's (its conditional
    /// fields when validating, ignored query parameters removed) with the scheme and authority
    /// the server gave it. It may be called after this returns, for a `stale-while-revalidate`
    /// refresh in the background.
    ///
    /// - Parameters:
    ///   - head: The request as the server received it.
    ///   - body: Its body, for methods other than `GET` and `HEAD`.
    ///   - fetch: Runs the handler.
    /// - Throws: What `fetch` throws when no stored response may stand in for the handler's.
    public func respond(to head: HTTPRequest, body: HTTPBody?, fetch: @escaping HTTPFetch) async throws -> Answer? {
        guard let keyed = keyedRequest(for: head) else { return nil }
        let scheme = head.scheme
        let authority = head.authority
        let sendsCookie = head.headerFields[.cookie] != nil
        let served = try await cache.respond(to: keyed, body: body) { request, body in
            var request = request
            request.scheme = scheme
            request.authority = authority
            var (response, responseBody) = try await fetch(request, body)
            if sendsCookie { Self.keepPrivateUnlessShared(&response) }
            return (response, responseBody)
        }
        return answer(for: served, method: head.method)
    }

    /// Adds `private` to a response made for a request with a `Cookie` that does not say it may
    /// be shared (`public`, `s-maxage`, a targeted `CDN-Cache-Control`, or `Vary` naming
    /// `Cookie`), as Rack::Cache's `private_headers` does: a handler's answer to a session is
    /// usually that session's, and its `max-age` is meant for the browser. RFC 9111 §3.5 asks
    /// the same of requests with `Authorization`. A 304 is left as it is: its fields refresh
    /// the stored response, which was not made for this request.
    static func keepPrivateUnlessShared(_ response: inout HTTPResponse) {
        guard response.status.code != 304 else { return }
        let fields = response.headerFields
        let cacheControl = fields.cacheControl
        if cacheControl.isPrivate || cacheControl.noStore || cacheControl.isPublic
            || cacheControl.sharedMaxAge.isPresent
        {
            return
        }
        if fields[HTTPField.Name("CDN-Cache-Control")!] != nil { return }
        let varied = fields[values: .vary].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingWhitespace().lowercased()
        }
        if varied.contains("cookie") || varied.contains("*") { return }
        response.headerFields[.cacheControl] = (["private"] + fields[values: .cacheControl]).joined(separator: ", ")
    }

    /// The client's answer for `served`, to a `method` request.
    func answer(for served: CachedResponse, method: HTTPRequest.Method) -> Answer {
        var head = served.response
        head.headerFields = served.clientFields(includingTrace: configuration.sendsTrace)
        guard served.hasContent(forMethod: method) else {
            return Answer(head: head, body: nil, outcome: served.outcome)
        }
        if let bytes = served.body.bytesInMemory {
            head.headerFields[.contentLength] = String(bytes.count)
        }
        return Answer(head: head, body: served.body, outcome: served.outcome)
    }
}
