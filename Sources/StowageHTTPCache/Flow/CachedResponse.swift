import HTTPTypes

/// A response as ``HTTPCache/respond(to:body:policy:fetch:)`` serves it, and how.
public struct CachedResponse: Sendable {
    /// The response: from the store (with `Age`) or from the origin.
    public var response: HTTPResponse
    /// Its body; streamed from the origin or the disk when large.
    public var body: HTTPBody
    /// The facts for the `Cache-Status` field (RFC 9211).
    public var status: CacheStatus
    /// Why the cache answered as it did, step by step, each with the RFC section that decided
    /// it: what the lookup found, the freshness figures and their source, the directive that
    /// settled reuse, and whether the response was stored (and if not, why: `no-store`,
    /// `private` in a shared cache, too large, refused by the will-cache hook, …).
    public var trace: [String] {
        get { notes.texts }
        set { notes = newValue.map(TraceNote.text) }
    }
    /// The steps of ``trace``, written out only when it is read.
    var notes: [TraceNote] = []
    /// The strings the will-cache hook stored with the response (``CacheProposal/userInfo``),
    /// as `NSCachedURLResponse`'s `userInfo` comes back from `URLCache`: on hits, revalidated
    /// and stale responses, and on the miss that stored it. Empty when nothing was attached or
    /// the response was not stored.
    public var userInfo: [String: String] = [:]

    /// How the response was served: hit, miss, revalidated, stale or bypass.
    public var outcome: CacheOutcome { status.outcome }

    /// Creates a response.
    public init(response: HTTPResponse, body: HTTPBody, status: CacheStatus) {
        self.response = response
        self.body = body
        self.status = status
    }
}

/// Sends a request to the origin and returns its response and body: the transport the cache
/// uses (AsyncHTTPClient in the client and the proxy).
public typealias HTTPFetch = @Sendable (HTTPRequest, HTTPBody?) async throws -> (HTTPResponse, HTTPBody)
