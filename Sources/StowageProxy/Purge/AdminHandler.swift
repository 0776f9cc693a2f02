import Foundation
import HTTPTypes
import HummingbirdCore
import NIOCore
import Prometheus
import StowageHTTPCache

/// The proxy's admin listener: purge and ban over HTTP, as Varnish's and nginx's operators
/// send `PURGE` and `BAN` from their deploy scripts.
///
/// ```
/// POST /purge?url=https://example.com/a       200 purged | 404 not stored
/// POST /ban?prefix=https://example.com/img/   200 banned N
/// POST /ban?tag=product-42                    200 banned N   (Surrogate-Key / Cache-Tag)
/// GET  /metrics                               Prometheus text, when a registry was given
/// ```
///
/// With ``ProxyConfiguration/AdminListener/token`` set, every request needs
/// `Authorization: Bearer TOKEN` (401 otherwise); without one the listener must be on a
/// loopback address (checked when the proxy starts).
struct AdminHandler: Sendable {
    let cache: HTTPCache
    let token: String?
    let registry: PrometheusCollectorRegistry?
    let metrics: ProxyMetrics

    func respond(to request: Request) async -> Response {
        if let token {
            let given = request.headers[.authorization]
            guard given == "Bearer " + token else {
                return ProxyHandler.plainResponse(.unauthorized, "give the admin token: Authorization: Bearer TOKEN")
            }
        }
        let path = request.uri.path
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
            return ProxyHandler.plainResponse(
                .notFound,
                "admin endpoints: POST /purge?url=URL, POST /ban?prefix=URL_PREFIX, POST /ban?tag=TAG"
            )
        }
        guard request.method == .post else {
            return ProxyHandler.plainResponse(.methodNotAllowed, "use POST for \(path)")
        }
        let query = Self.parameters(request.uri.query ?? "")
        do {
            switch (path, query["url"], query["prefix"], query["tag"]) {
            case ("/purge", let url?, nil, nil):
                let purged = try await cache.purge(url: url)
                metrics.recordPurge(.url, removed: purged ? 1 : 0)
                return purged
                    ? ProxyHandler.plainResponse(.ok, "purged \(url)")
                    : ProxyHandler.plainResponse(.notFound, "nothing stored for \(url)")
            case ("/ban", nil, let prefix?, nil) where !prefix.isEmpty:
                let count = try await cache.ban(urlPrefix: prefix)
                metrics.recordPurge(.prefix, removed: count)
                return ProxyHandler.plainResponse(.ok, "banned \(count)")
            case ("/ban", nil, nil, let tag?) where !tag.isEmpty:
                let count = try await cache.ban(tag: tag)
                metrics.recordPurge(.tag, removed: count)
                return ProxyHandler.plainResponse(.ok, "banned \(count)")
            default:
                return ProxyHandler.plainResponse(
                    .badRequest,
                    "give exactly one of: /purge?url=URL, /ban?prefix=URL_PREFIX (not empty), /ban?tag=TAG"
                )
            }
        } catch let error as HTTPCacheError {
            return ProxyHandler.plainResponse(.badRequest, error.message)
        } catch {
            return ProxyHandler.plainResponse(.internalServerError, "\(error)")
        }
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
