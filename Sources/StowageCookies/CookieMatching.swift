import Foundation

/// The matching rules of RFC 6265 §5.1: canonical hosts, domain matching, default paths and
/// path matching.
enum CookieMatching {
    /// Whether `host` is an IPv4 or IPv6 address literal rather than a host name.
    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }  // IPv6; URL gives it without brackets
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber)
                    && Int(part).map { $0 <= 255 } == true
            }
    }

    /// §5.1.3: `domain` is `host`, or a suffix of it after a dot, and `host` is not an IP address.
    static func domainMatches(host: String, domain: String) -> Bool {
        if host == domain { return true }
        guard host.hasSuffix(domain), !isIPAddress(host) else { return false }
        let boundary = host.utf8.index(
            host.utf8.endIndex,
            offsetBy: -domain.utf8.count - 1,
            limitedBy: host.utf8.startIndex
        )
        return boundary.map { host.utf8[$0] == UInt8(ascii: ".") } ?? false
    }

    /// §5.1.4: the directory of the request path: up to, not including, its last `/`; `/` when
    /// the path is empty, relative or has one `/` only.
    static func defaultPath(of requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let lastSlash = requestPath.lastIndex(of: "/"),
            lastSlash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<lastSlash])
    }

    /// §5.1.4: the paths are equal; or `cookiePath` is a prefix of `requestPath` and ends in
    /// `/`, or the request path continues with `/` after it.
    static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// The parts of a request URL cookies are matched against.
    struct Request {
        /// Lowercased, without a trailing dot.
        var host: String
        /// Starts with `/`; no query.
        var path: String
        /// `https` or `wss`: a "secure protocol" in RFC 6265's words.
        var isSecure: Bool

        init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), let rawHost = url.host(percentEncoded: false),
                !rawHost.isEmpty
            else { return nil }
            var host = rawHost.lowercased()
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.hasSuffix(".") { host.removeLast() }
            guard !host.isEmpty else { return nil }
            self.host = host
            let path = url.path(percentEncoded: true)
            self.path = path.isEmpty ? "/" : path
            isSecure = scheme == "https" || scheme == "wss"
        }
    }
}
