import Foundation
import HTTPTypes

/// The primary cache key of a request: its target URI, normalized (RFC 9111 §2, RFC 9110 §4.2.3).
///
/// Scheme and host are case-insensitive and lowercased; a default port (`:80` for http, `:443`
/// for https) is dropped; an empty path is `/`. The method is not part of the key: only GET
/// responses are stored, and HEAD is answered from them (RFC 9111 §4). The key is only ever a string in
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
        let scheme = Self.lowercased(scheme)
        var authority = Self.lowercased(authority)
        if scheme == "http", authority.hasSuffix(":80") { authority.removeLast(3) }
        if scheme == "https", authority.hasSuffix(":443") { authority.removeLast(4) }
        let path = path.isEmpty ? "/" : path
        // Every lookup makes a key: one buffer of the final size, not one per concatenation.
        var uri = ""
        uri.reserveCapacity(scheme.utf8.count + 3 + authority.utf8.count + path.utf8.count)
        uri += scheme
        uri += "://"
        uri += authority
        uri += path
        self.uri = uri
    }

    /// `text.lowercased()`, without the copy when `text` is ASCII with no capital letter (as
    /// schemes and hosts nearly always are) and so already its own lowercase form.
    static func lowercased(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 && !(0x41...0x5A).contains($0) } ? text : text.lowercased()
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
