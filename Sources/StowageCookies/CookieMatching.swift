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

    /// Letters, digits, `-`, `_`, `.` and the `:` of an IPv6 literal (RFC 1123 §2.1 names,
    /// RFC 3986 §3.2.2 literals).
    static func isHostByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
    }

    /// `name` as the host of a URL spells it: a non-ASCII (IDN) name in Punycode
    /// (`公司.cn` → `xn--55qx5d.cn`), lowercased, since request hosts reach the store that way
    /// and a `Domain` or a public-suffix rule compared in the other spelling would never match.
    /// `nil` when `name` is not a host name.
    static func asciiHost(_ name: String) -> String? {
        let lowered = name.lowercased()
        if lowered.utf8.allSatisfy(isHostByte) { return lowered }
        guard !lowered.unicodeScalars.contains(where: { $0.isASCII && !isHostByte(UInt8($0.value)) }),
            let host = URL(string: "http://\(lowered)/")?.host(percentEncoded: false)?.lowercased(),
            host.utf8.allSatisfy(isHostByte)
        else { return nil }
        return host
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
            // A percent-encoded host decodes to anything: `evil.com%00.example.com` would
            // domain-match example.com while a resolver that stops at the NUL connects to
            // evil.com. Only the bytes a DNS name or an address literal holds are scoped
            // (Foundation gives an IDN host in Punycode, so names are ASCII here).
            guard !host.isEmpty, host.utf8.allSatisfy(isHostByte) else { return nil }
            self.host = host
            let path = url.path(percentEncoded: true)
            self.path = path.isEmpty ? "/" : path
            isSecure = scheme == "https" || scheme == "wss"
        }
    }
}
