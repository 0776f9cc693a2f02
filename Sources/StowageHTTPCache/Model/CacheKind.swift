/// Whether a cache serves one user (a client's) or many (a proxy's), RFC 9111 §1.
///
/// A shared cache honours `s-maxage` and `proxy-revalidate`, never stores `private`
/// responses, and stores responses to requests with `Authorization` only when the response
/// allows it (§3.5).
public enum CacheKind: String, Sendable, Hashable, Codable {
    /// A cache dedicated to one user, such as an app's or a browser's.
    case `private`
    /// A cache whose responses are reused for many users, such as a reverse proxy's.
    case shared
}
