import Foundation
import HTTPTypes

/// The primary cache key of a request: its target URI, normalized (RFC 9111 §2, RFC 9110 §4.2.3).
///
/// Scheme and host are case-insensitive and lowercased; a default port (`:80` for http, `:443`
/// for https) is dropped; an empty path is `/`. The method is not part of the key: only GET
/// responses are stored, and HEAD is answered from them (§4). The key is only ever a string in
/// the disk cache's index, never a path.
public struct CacheKey: Sendable, Hashable, CustomStringConvertible {
    /// The normalized URI, e.g. `https://example.com/a?b=1`.
    public var uri: String

    /// The key of `request`.
    public init(_ request: HTTPRequest) {
        self.init(scheme: request.scheme ?? "http", authority: request.authority ?? "", path: request.path ?? "/")
    }

    /// The key of a URI given in parts.
    public init(scheme: String, authority: String, path: String) {
        let scheme = scheme.lowercased()
        var authority = authority.lowercased()
        if scheme == "http", authority.hasSuffix(":80") { authority.removeLast(3) }
        if scheme == "https", authority.hasSuffix(":443") { authority.removeLast(4) }
        uri = scheme + "://" + authority + (path.isEmpty ? "/" : path)
    }

    /// The key of an absolute URI (`Location`/`Content-Location`), or of a reference relative to
    /// `base`; `nil` when it cannot be resolved.
    init?(reference: String, base: CacheKey) {
        if let schemeEnd = reference.range(of: "://") {
            let scheme = String(reference[..<schemeEnd.lowerBound])
            let rest = reference[schemeEnd.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            self.init(scheme: scheme, authority: String(rest[..<slash]), path: String(rest[slash...]))
        } else if reference.hasPrefix("/"), !reference.hasPrefix("//"), let origin = base.origin {
            self.init(uri: origin + reference)
        } else {
            return nil
        }
    }

    init(uri: String) { self.uri = uri }

    /// `scheme://authority` of the key.
    var origin: String? {
        guard let schemeEnd = uri.range(of: "://") else { return nil }
        let rest = uri[schemeEnd.upperBound...]
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        return String(uri[..<slash])
    }

    /// The text logs and messages show.
    public var description: String { uri }
}
