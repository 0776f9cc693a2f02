import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Testing

/// What the handler saw of a request, as a cacheable answer: the authority it answers for (the
/// request's, which RFC 9112 §3.2.2 takes from an absolute-form target before `Host`) and the
/// path. A stored answer naming another authority or path than the request it is served to is
/// a poisoned one.
@Sendable func appView(_ request: Request, _ context: BasicRequestContext) -> Response {
    let authority = request.uri.host ?? request.head.authority ?? "-"
    return Response(
        status: .ok,
        headers: [.cacheControl: "public, max-age=60"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: "authority=\(authority) path=\(request.uri.path)"))
    )
}

/// The authority and path an ``appView(_:_:)`` answer names.
func seenByApp(_ body: String) throws -> (authority: String, path: String) {
    let match = try #require(body.wholeMatch(of: /authority=(\S+) path=(\S+)/), "the app's answer: \(body)")
    return (String(match.1), String(match.2))
}

// NIOHTTPTypesHTTP1, under Hummingbird's HTTP/1 server, turns an absolute-form target into its
// path and keeps `Host` as the authority; the cache must key on what the handler answers for.
@Suite("Hummingbird response-cache middleware: absolute-form targets on a live server")
struct ResponseCacheAbsoluteFormTests {
    @Test(
        "An absolute-form request naming another host than its Host stores nothing an origin-form request to that Host gets"
    )
    func absoluteFormDoesNotPoisonOriginForm() async throws {
        try await withLiveCachedApp { router in
            router.get("/**", use: appView)
        } _: { client, _ in
            let port = client.port
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

    @Test("An absolute-form request's answer is stored, if at all, under the URL the handler answered it for")
    func absoluteFormKeyMatchesAppView() async throws {
        try await withLiveCachedApp { router in
            router.get("/**", use: appView)
        } _: { client, cache in
            let port = client.port
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
