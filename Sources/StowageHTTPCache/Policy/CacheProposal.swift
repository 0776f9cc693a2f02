import HTTPTypes

/// A response about to be stored, as the will-cache hook sees it — the
/// `connection:willCacheResponse:` delegate of `NSURLConnection`.
///
/// The hook may change the response's status or header fields, keep it in memory only, or
/// refuse it by returning `nil`:
///
/// ```swift
/// configuration.willCache = { proposal in
///     if proposal.request.path?.hasPrefix("/private") == true { return nil }   // never stored
///     var proposal = proposal
///     proposal.response.headerFields[.setCookie] = nil
///     return proposal
/// }
/// ```
public struct CacheProposal: Sendable {
    /// Where a response may be kept (`NSURLCacheStoragePolicy`).
    public enum Storage: Sendable, Hashable {
        /// Memory and disk.
        case allowed
        /// Memory only: gone when the process ends or the memory cache evicts it.
        case memoryOnly
    }

    /// The request the response answers.
    public let request: HTTPRequest
    /// The response to store (fields as they will be stored); the hook may change it.
    public var response: HTTPResponse
    /// Where to keep it; default ``Storage/allowed``.
    public var storage: Storage

    /// Creates a proposal.
    public init(request: HTTPRequest, response: HTTPResponse, storage: Storage = .allowed) {
        self.request = request
        self.response = response
        self.storage = storage
    }
}

/// The will-cache hook: returns the proposal to store (changed or not), or `nil` to refuse.
public typealias WillCacheHook = @Sendable (CacheProposal) -> CacheProposal?
