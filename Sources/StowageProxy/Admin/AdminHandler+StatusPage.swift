import Foundation
import HTTPTypes
import HummingbirdCore
import NIOCore

// The status page: GET / (HTML), /status.js, /status.css and /status.json, as nginx's
// stub_status and Traefik's dashboard give an operator something to look at without Prometheus.
extension AdminHandler {
    /// The paths of the status page and its resources.
    static let statusPagePaths: Set<String> = ["/", "/status.json", "/status.js", "/status.css"]

    /// The page's policy: its own script, style and JSON only, and no framing (OWASP's
    /// Content Security Policy cheat sheet, strict policy). The script writes figures with
    /// `textContent`, never HTML, so a purge target cannot become markup either way.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

    /// The answer to `GET path` for one of ``statusPagePaths``.
    func statusPage(_ path: String) async -> Response {
        switch path {
        case "/status.json":
            let status = await metrics.activity.status(of: cache, upstream: upstream)
            do {
                return Self.pageResponse(try status.encoded(), contentType: "application/json")
            } catch {
                return ProxyHandler.plainResponse(.internalServerError, "could not encode the status: \(error)")
            }
        case "/status.js":
            return Self.pageResponse(
                Data(StatusPageResources.script.utf8),
                contentType: "text/javascript; charset=utf-8"
            )
        case "/status.css":
            return Self.pageResponse(Data(StatusPageResources.style.utf8), contentType: "text/css; charset=utf-8")
        default:
            return Self.pageResponse(Data(StatusPageResources.html.utf8), contentType: "text/html; charset=utf-8")
        }
    }

    /// `bytes` as `contentType`, never cached, never sniffed as another type, under
    /// ``contentSecurityPolicy``.
    static func pageResponse(_ bytes: Data, contentType: String) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        fields[.contentLength] = String(bytes.count)
        fields[.cacheControl] = "no-store"
        fields[.contentSecurityPolicy] = contentSecurityPolicy
        fields[.xContentTypeOptions] = "nosniff"
        fields[HTTPField.Name("X-Frame-Options")!] = "DENY"
        fields[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// Whether `field` is HTTP Basic credentials (RFC 7617) whose password is `token`, whatever
    /// the user name; the password is compared as ``isToken(_:equalTo:)`` compares, in time
    /// that depends only on its length.
    static func isBasicToken(_ field: String, equalTo token: String) -> Bool {
        let parts = field.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Data(base64Encoded: String(parts[1].trimmingCharacters(in: .whitespaces))),
            let credentials = String(data: decoded, encoding: .utf8),
            let colon = credentials.firstIndex(of: ":")
        else { return false }
        let password = credentials[credentials.index(after: colon)...]
        return isToken("Bearer " + password, equalTo: token)
    }

    /// Whether `authority` (a request's `Host`) names the listener by an IP address or as
    /// `localhost`: a page reached through any other name may be a DNS-rebinding attack, where
    /// another site's name is pointed at 127.0.0.1 to read the page.
    static func isLiteralHost(_ authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return false }
        var host = Substring(authority)
        if host.hasPrefix("[") {
            // [IPv6]:port
            // [IPv6] or [IPv6]:port and nothing else: `[::1].attacker.example` is a name.
            guard let end = host.firstIndex(of: "]") else { return false }
            let address = host[host.index(after: host.startIndex)..<end]
            let tail = host[host.index(after: end)...]
            let port = tail.dropFirst()
            guard
                tail.isEmpty
                    || (tail.first == ":" && !port.isEmpty && port.allSatisfy(\.isASCII) && UInt16(port) != nil)
            else { return false }
            return address.contains(":") && address.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        if host.lowercased() == "localhost" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { UInt8($0) != nil }
    }
}
