import Foundation
import HTTPTypes
import HummingbirdCore
import NIOCore
import Prometheus
import StowageCore
import StowageHTTPCache

/// The proxy's admin listener: purge and ban over HTTP, as Varnish's and nginx's operators
/// send `PURGE` and `BAN` from their deploy scripts.
///
/// ```
/// POST /purge?url=https://example.com/a       200 purged | 404 not stored
/// POST /ban?prefix=https://example.com/img/   200 banned N
/// POST /ban?tag=product-42                    200 banned N   (Surrogate-Key / Cache-Tag)
/// GET  /metrics                               Prometheus text, when a registry was given
/// GET  /status.json                           the status document (``ProxyStatus``)
/// GET  /                                      the status page (and /status.js, /status.css)
/// ```
///
/// With ``ProxyConfiguration/AdminListener/token`` set, every request needs
/// `Authorization: Bearer TOKEN` (401 with an RFC 6750 §3 `WWW-Authenticate: Bearer
/// realm="stowage-admin"` challenge otherwise); without one the listener must be on a loopback
/// address (checked when the proxy starts), and the status page and `/metrics` answer only a
/// `Host` that is an IP address or `localhost` (against DNS rebinding). The status page's GETs
/// also take the token as the password of HTTP Basic credentials (RFC 7617), which a browser
/// asks for (`AdminHandler+StatusPage.swift`). A request other than a GET that a web page sent
/// (``isFromBrowserPage(_:)``) is refused with 403, token or not.
///
/// Every answer carries `Stowage-Admin: 1`, which the main listener never passes on from an
/// origin: ``ProxyAdminClient`` sends its token only to a server that answered with both.
struct AdminHandler: Sendable {
    let cache: HTTPCache
    let token: String?
    let registry: PrometheusCollectorRegistry?
    let metrics: ProxyMetrics
    /// The upstream's URL, as the status page shows it.
    let upstream: String

    /// The field that marks the admin listener's answers.
    static let markerField = HTTPField.Name("Stowage-Admin")!
    /// The realm of the listener's `Bearer` challenge (RFC 6750 §3).
    static let realm = "stowage-admin"

    func respond(to request: Request) async -> Response {
        var response = await answer(request)
        response.headers[Self.markerField] = "1"
        return response
    }

    private func answer(_ request: Request) async -> Response {
        let path = request.uri.path
        let isStatusPage = Self.statusPagePaths.contains(path) && request.method == .get
        if request.method != .get, Self.isFromBrowserPage(request.headers) {
            return ProxyHandler.plainResponse(
                .forbidden,
                "the admin listener takes no request a web page sent (it carried Origin or Sec-Fetch-Site); send it from a script or `stowage proxy invalidate`"
            )
        }
        if let token {
            let given = request.headers[.authorization]
            let accepted =
                given.map {
                    Self.isToken($0, equalTo: token) || (isStatusPage && Self.isBasicToken($0, equalTo: token))
                } ?? false
            guard accepted else {
                var refusal = ProxyHandler.plainResponse(
                    .unauthorized,
                    "give the admin token: Authorization: Bearer TOKEN"
                )
                // RFC 6750 §3.1: a request that carried a token is told it was not the right one.
                refusal.headers[.wwwAuthenticate] =
                    "Bearer realm=\"\(Self.realm)\"" + (given == nil ? "" : ", error=\"invalid_token\"")
                if isStatusPage {
                    // RFC 7617 §2: the challenge a browser answers by asking for a user name and
                    // password; the token is the password. Only the read-only page takes it: a
                    // browser sends remembered Basic credentials with any site's form POST, so
                    // /purge and /ban taking them would be open to cross-site requests.
                    refusal.headers.append(
                        HTTPField(name: .wwwAuthenticate, value: "Basic realm=\"\(Self.realm)\", charset=\"UTF-8\"")
                    )
                }
                return refusal
            }
        } else if isStatusPage || path == "/metrics", !Self.isLiteralHost(request.head.authority) {
            // The page and /metrics are what a web page could read through a rebound name.
            return ProxyHandler.plainResponse(
                .misdirectedRequest,
                "open \(path) at the listener's IP address or localhost (a listener without a token answers no other host name, against DNS rebinding)"
            )
        }
        if isStatusPage { return await statusPage(path) }
        if path == "/metrics", let registry {
            guard request.method == .get else {
                return ProxyHandler.plainResponse(.methodNotAllowed, "use GET for /metrics")
            }
            await metrics.recordSize(of: cache)
            var fields = HTTPFields()
            fields[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(
                status: .ok,
                headers: fields,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
        guard path == "/purge" || path == "/ban" else {
            if Self.statusPagePaths.contains(path) {
                return ProxyHandler.plainResponse(.methodNotAllowed, "use GET for \(path)")
            }
            return ProxyHandler.plainResponse(
                .notFound,
                "admin endpoints: POST /purge?url=URL, POST /ban?prefix=URL_PREFIX, POST /ban?tag=TAG, GET /metrics, GET /status.json, GET / (the status page)"
            )
        }
        guard request.method == .post else {
            return ProxyHandler.plainResponse(.methodNotAllowed, "use POST for \(path)")
        }
        let query = Self.parameters(request.uri.query ?? "")
        do {
            switch (path, query["url"], query["prefix"], query["tag"]) {
            case ("/purge", let url?, nil, nil):
                let purged = try await cache.invalidate(url: url)
                metrics.recordPurge(.url, target: url, removed: purged ? 1 : 0, at: cache.configuration.clock.now())
                return purged
                    ? ProxyHandler.plainResponse(.ok, "purged \(url)")
                    : ProxyHandler.plainResponse(.notFound, "nothing stored for \(url)")
            case ("/ban", nil, let prefix?, nil) where !prefix.isEmpty:
                let count = try await cache.invalidate(urlPrefix: prefix)
                metrics.recordPurge(.prefix, target: prefix, removed: count, at: cache.configuration.clock.now())
                return ProxyHandler.plainResponse(.ok, "banned \(count)")
            case ("/ban", nil, nil, let tag?) where !tag.isEmpty:
                let count = try await cache.invalidate(tag: tag)
                metrics.recordPurge(.tag, target: tag, removed: count, at: cache.configuration.clock.now())
                return ProxyHandler.plainResponse(.ok, "banned \(count)")
            default:
                return ProxyHandler.plainResponse(
                    .badRequest,
                    "give exactly one of: /purge?url=URL, /ban?prefix=URL_PREFIX (not empty), /ban?tag=TAG"
                )
            }
        } catch let error as StowageError where error.code == .invalidArgument {
            return ProxyHandler.plainResponse(.badRequest, error.message)
        } catch {
            return ProxyHandler.plainResponse(.internalServerError, "\(error)")
        }
    }

    /// Whether `field` is `Bearer TOKEN` for `token`, in time that depends only on the length of
    /// `field`: every byte is compared, with no exit at the first difference, so the time an
    /// answer takes tells an attacker nothing about the token (as OpenSSL's `CRYPTO_memcmp`).
    static func isToken(_ field: String, equalTo token: String) -> Bool {
        let given = Array(field.utf8)
        let expected = Array(("Bearer " + token).utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for (index, byte) in given.enumerated() {
            // Past its end, `expected` is read from its start: the same work for every length.
            difference |= byte ^ expected[index % expected.count]
        }
        return difference == 0
    }

    /// Whether `fields` say a browser sent the request for a web page: an `Origin` field (sent
    /// with every cross-origin request and every POST, RFC 6454 §7 and the Fetch standard) or a
    /// `Sec-Fetch-Site` other than `none` (a request the user typed). Without a token, a page on
    /// any site can POST a form or a `no-cors` fetch to a loopback listener, which is not
    /// preflighted (a CORS "simple request"): refusing these, as Django's and Go's
    /// `CrossOriginProtection` CSRF checks do, keeps /purge and /ban to scripts and the CLI.
    static func isFromBrowserPage(_ fields: HTTPFields) -> Bool {
        if fields[.origin] != nil { return true }
        if let site = fields[HTTPField.Name("Sec-Fetch-Site")!], site != "none" { return true }
        return false
    }

    /// `a=1&b=x%20y` → `["a": "1", "b": "x y"]`; a name given twice keeps its first value.
    static func parameters(_ query: String) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ")
            }
            guard let name = parts.first?.removingPercentEncoding, parameters[name] == nil else { continue }
            parameters[name] = (parts.count == 2 ? parts[1] : "").removingPercentEncoding ?? ""
        }
        return parameters
    }
}
