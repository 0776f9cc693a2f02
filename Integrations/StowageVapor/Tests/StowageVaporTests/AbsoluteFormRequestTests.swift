import Foundation
import HTTPTypes
import StowageHTTPCache
import StowageTesting
import StowageVapor
import Testing
import Vapor
import VaporTesting

/// Runs `test` with the port of a live Vapor server on 127.0.0.1 (port 0: the kernel picks)
/// whose middleware caches through a shared cache in a temporary directory, keyed on each
/// request's own `Host`, and that cache; every path answers what the app saw (``appView(_:)``).
func withLiveCachedApp(_ test: (Int, HTTPCache) async throws -> Void) async throws {
    let directory = try TemporaryDirectory("StowageVaporLiveTests")
    let cache = try HTTPCache(
        directory: directory.url,
        configuration: HTTPCache.Configuration(kind: .shared, name: "stowage")
    )
    try await withApp { app in
        app.middleware.use(try ResponseCacheMiddleware(cache: cache))
        app.get("**", use: appView)
        try await app.server.start(address: .hostname("127.0.0.1", port: 0))
        do {
            let port = try #require(app.http.server.shared.localAddress?.port)
            try await test(port, cache)
        } catch {
            await app.server.shutdown()
            throw error
        }
        await app.server.shutdown()
    }
    try await cache.close()
    withExtendedLifetime(directory) {}
}

/// What the app saw of a request, as a cacheable answer: the authority it answers for (an
/// absolute-form target's, which RFC 9112 §3.2.2 puts before `Host`, else `Host`) and the path.
/// A stored answer naming another authority or path than the request it is served to is a
/// poisoned one.
@Sendable func appView(_ request: Request) -> Response {
    let authority = request.url.host ?? request.headers.first(name: .host) ?? "-"
    return response("authority=\(authority) path=\(request.url.path)", headers: ["Cache-Control": "public, max-age=60"])
}

/// The authority and path an ``appView(_:)`` answer names.
func seenByApp(_ body: String) throws -> (authority: String, path: String) {
    let match = try #require(body.wholeMatch(of: /authority=(\S+) path=(\S+)/), "the app's answer: \(body)")
    return (String(match.1), String(match.2))
}

// Vapor reads an absolute-form target as a path (`URI(path:)`: `/http://evil.example/page`, no
// host), so its routes see `Host`'s authority; NIOHTTPTypesHTTP1 (Hummingbird) takes the
// target's path and `Host` instead. Either way the cache must key on what the app answers for.
@Suite("Vapor response-cache middleware: absolute-form targets on a live server")
struct AbsoluteFormRequestTests {
    @Test(
        "An absolute-form request naming another host than its Host stores nothing an origin-form request to that Host gets"
    )
    func absoluteFormDoesNotPoisonOriginForm() async throws {
        try await withLiveCachedApp { port, _ in
            for _ in 1...2 {
                _ = try await RawHTTPExchange.send(
                    ["GET http://evil.example/page HTTP/1.1", "Host: good.example"],
                    toPort: port
                )
            }
            let origin = try await RawHTTPExchange.send(["GET /page HTTP/1.1", "Host: good.example"], toPort: port)
            #expect(origin.status == 200)
            #expect(origin.body == "authority=good.example path=/page")
        }
    }

    @Test("An absolute-form request's answer is stored, if at all, under the URL the app answered it for")
    func absoluteFormKeyMatchesAppView() async throws {
        try await withLiveCachedApp { port, cache in
            let request = ["GET http://evil.example/page HTTP/1.1", "Host: good.example"]
            let absolute = try await RawHTTPExchange.send(request, toPort: port)
            #expect(absolute.status == 200)
            let seen = try seenByApp(absolute.body)
            if absolute.value(of: "Cache-Status")?.contains("stored") ?? false {
                #expect(try await cache.invalidate(url: "http://\(seen.authority)\(seen.path)"))
            }
            let again = try await RawHTTPExchange.send(request, toPort: port)
            #expect(again.body == absolute.body)
            #expect(!again.isHit)
        }
    }
}
