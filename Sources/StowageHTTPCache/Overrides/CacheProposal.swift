import HTTPTypes
import StowageCore

/// A response about to be stored, as the will-cache hook sees it — NSURLSession's
/// `URLSession(_:dataTask:willCacheResponse:completionHandler:)` and NSURLConnection's
/// `connection:willCacheResponse:`, which return a new `NSCachedURLResponse` with new `data`
/// and `userInfo`.
///
/// The hook may change the response's status or header fields, replace the body that is stored,
/// attach user info, keep the response in memory only, or refuse it by returning `nil`:
///
/// ```swift
/// configuration.willCache = { proposal in
///     if proposal.request.path?.hasPrefix("/private") == true { return nil }   // never stored
///     var proposal = proposal
///     proposal.response.headerFields[.setCookie] = nil
///     proposal.userInfo["storedBy"] = "catalog-sync"
///     if let body = proposal.body { proposal.body = minify(body) }              // stored instead
///     return proposal
/// }
/// ```
///
/// What the hook decides applies to the stored copy only: the caller of the request that brought
/// the response is served the origin's response and body, as NSURLSession delivers the original
/// data to the task whatever its delegate hands to the cache.
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
    ///
    /// What the hook returns is held to the rules the origin's response met: one that is not
    /// storable (a 206 or 304, `no-store`, `Vary: *`, RFC 9111 §3) is not stored, and the fields
    /// a cache never stores (hop-by-hop fields, §3.1; a shared cache's `private` fields and,
    /// unless it stores them, cookies) are left out. A stored `Content-Length` always gives the
    /// stored body's length.
    public var response: HTTPResponse
    /// Where to keep it; default ``Storage/allowed``.
    public var storage: Storage
    /// The body to store.
    ///
    /// The cache hands the hook the origin's body when it holds it whole: a body already in
    /// memory, or one with a known length up to 256 KiB, read before the hook runs. It is `nil`
    /// for a body that streams (larger, or of unknown length); the origin's body is then stored
    /// as it streams to the caller, and bytes the hook sets are stored once that body has
    /// arrived whole (none when it is cut short, RFC 9111 §3.3).
    ///
    /// Set it to store other bytes (NSURLSession's `willCacheResponse` returning new `data`); a
    /// stored `Content-Length` is set to their length. Like any body, they are stored only within
    /// the per-entry limit (``HTTPCache/Configuration/maximumEntryFraction`` of the tier's
    /// capacity, and ``HTTPCache/Configuration/maximumBodySize``): larger ones are not stored, and
    /// the trace says so. Setting `nil` stores the origin's body.
    public var body: [UInt8]?
    /// Small strings stored with the response and returned with it on every hit
    /// (``CachedResponse/userInfo``), from memory or disk and after the cache is reopened —
    /// `NSCachedURLResponse`'s `userInfo`, limited to strings. Empty when the hook runs.
    ///
    /// Keys and values may hold any characters, control characters and NUL included: they are
    /// stored length-prefixed. At most ``maximumUserInfoCount`` entries of at most
    /// ``maximumUserInfoSize`` bytes (UTF-8 of keys and values together): a hook that returns more
    /// stores nothing (``validate(userInfo:)`` says why).
    public var userInfo: [String: String]

    /// The most entries ``userInfo`` may have: 32.
    public static let maximumUserInfoCount = 32
    /// The most bytes ``userInfo``'s keys and values may take together, in UTF-8: 4 KiB, so a
    /// record stays small enough to live in the disk cache's index and the shared level.
    public static let maximumUserInfoSize = 4096

    /// Creates a proposal.
    ///
    /// - Parameters:
    ///   - request: The request the response answers.
    ///   - response: The response to store.
    ///   - storage: Where to keep it; default ``Storage/allowed``.
    ///   - body: The body to store, `nil` for the origin's as it streams; default `nil`.
    ///   - userInfo: Strings stored with the response; default none.
    public init(
        request: HTTPRequest,
        response: HTTPResponse,
        storage: Storage = .allowed,
        body: [UInt8]? = nil,
        userInfo: [String: String] = [:]
    ) {
        self.request = request
        self.response = response
        self.storage = storage
        self.body = body
        self.userInfo = userInfo
    }

    /// Checks that `userInfo` is within ``maximumUserInfoCount`` and ``maximumUserInfoSize``.
    ///
    /// The cache runs this on what the will-cache hook returns; a hook may run it first to keep a
    /// response it would otherwise lose.
    ///
    /// - Throws: `StowageError` `.tooLarge`, saying which limit was passed and by how much.
    public static func validate(userInfo: [String: String]) throws {
        guard userInfo.count <= maximumUserInfoCount else {
            throw StowageError(
                code: .tooLarge,
                message: "the user info has \(userInfo.count) entries; at most \(maximumUserInfoCount) are stored "
                    + "(keep larger data in a store of its own and put its key here)"
            )
        }
        let size = userInfo.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= maximumUserInfoSize else {
            throw StowageError(
                code: .tooLarge,
                message: "the user info's keys and values take \(size) bytes; at most \(maximumUserInfoSize) are "
                    + "stored (keep larger data in a store of its own and put its key here)"
            )
        }
    }
}

/// The will-cache hook: returns the proposal to store (changed or not), or `nil` to refuse.
///
/// A hook that throws refuses the response as `nil` does: the caller is still served it, and
/// what was stored for the URL before stays as it was (nothing is removed or half-written). The
/// error is logged and named in ``CachedResponse/trace``.
public typealias WillCacheHook = @Sendable (CacheProposal) async throws -> CacheProposal?
