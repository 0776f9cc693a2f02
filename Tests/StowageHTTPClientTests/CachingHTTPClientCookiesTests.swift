import AsyncHTTPClient
import Foundation
import HTTPTypes
import StowageCookies
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

/// The client with a cookie store, against a real origin on 127.0.0.1.
@Suite struct CachingHTTPClientCookiesTests {
    /// `/login` sets a cookie (cacheable for a minute); every other path echoes the `Cookie` field.
    static let script: TestOriginServer.Script = { received in
        if received.head.path == "/login" {
            return .init(
                fields: [
                    ("Set-Cookie", "sid=abc; Path=/; Max-Age=3600; HttpOnly"),
                    ("Set-Cookie", "bad=1; Domain=com"),
                    ("Cache-Control", "private, max-age=60"),
                ],
                body: "welcome"
            )
        }
        return .init(fields: [("Cache-Control", "no-store")], body: received.head.headerFields[.cookie] ?? "(none)")
    }

    func withClient(
        cookies: CookieStore?,
        _ body: (CachingHTTPClient, TestOriginServer) async throws -> Void
    ) async throws {
        try await withCachingClient(cookies: cookies, script: Self.script, body)
    }

    func get(_ origin: TestOriginServer, _ path: String, cookie: String? = nil) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: path)
        if let cookie { request.headerFields[.cookie] = cookie }
        return request
    }

    func fetch(_ client: CachingHTTPClient, _ request: HTTPRequest) async throws -> String {
        try await text(try await client.execute(request))
    }

    func text(_ served: CachedResponse) async throws -> String {
        String(decoding: try await served.body.collect(upTo: 1 << 20), as: UTF8.self)
    }

    @Test("round trip: Set-Cookie from the origin is stored (bad ones ignored) and sent back, after the caller's own")
    func clientRoundTrip() async throws {
        let scratch = try TemporaryDirectory()
        let cookies = try await CookieStore.open(at: scratch.url.appending(path: "Cookies/cookies.stowcookies"))
        try await withClient(cookies: cookies) { client, origin in
            let before = try await fetch(client, get(origin, "/me"))
            #expect(before == "(none)")
            let login = try await fetch(client, get(origin, "/login"))
            #expect(login == "welcome")
            #expect(cookies.allCookies.map(\.description) == ["sid=abc"])
            let after = try await fetch(client, get(origin, "/me"))
            #expect(after == "sid=abc")
            let merged = try await fetch(client, get(origin, "/me", cookie: "own=1"))
            #expect(merged == "own=1; sid=abc")
        }
        // Written to the file, so the next launch has it.
        let reopened = try await CookieStore.open(at: try #require(cookies.fileURL))
        #expect(reopened.allCookies.map(\.name) == ["sid"])
    }

    @Test("a response served from a private cache does not set its stored cookies again")
    func cachedSetCookieNotReplayed() async throws {
        let cookies = CookieStore()
        try await withClient(cookies: cookies) { client, origin in
            let first = try await client.execute(get(origin, "/login"))
            #expect(first.outcome == .miss)
            _ = try await text(first)
            try await cookies.removeAll()  // e.g. the user signed out
            let second = try await client.execute(get(origin, "/login"))
            #expect(second.outcome == .hit)
            _ = try await text(second)
            #expect(cookies.allCookies.isEmpty)
            #expect(origin.requestCount(path: "/login") == 1)
        }
    }

    @Test("without a cookie store no cookie is kept or sent, as before")
    func noCookieStoreByDefault() async throws {
        try await withClient(cookies: nil) { client, origin in
            #expect(client.cookies == nil)
            _ = try await fetch(client, get(origin, "/login"))
            let echoed = try await fetch(client, get(origin, "/me"))
            #expect(echoed == "(none)")
        }
    }

    @Test("with a client that follows redirects, each Set-Cookie is scoped to the host that sent it")
    func redirectSetCookieScopedToItsHost() async throws {
        // The second origin, reached as `localhost`, answers everything with a cookie that
        // must stay its own; the first redirects to it, setting a cookie of its own on the way.
        let second = try await TestOriginServer.start { _ in
            .init(fields: [("Set-Cookie", "sid=attacker; Path=/; Max-Age=3600")], body: "landed")
        }
        let first = try await TestOriginServer.start { received in
            if received.head.path == "/go" {
                return .init(
                    status: 302,
                    fields: [
                        ("Location", "http://localhost:\(second.port)/land"),
                        ("Set-Cookie", "hop=1; Path=/; Max-Age=3600"),
                        ("Cache-Control", "no-store"),
                    ]
                )
            }
            return .init(fields: [("Cache-Control", "no-store")], body: received.head.headerFields[.cookie] ?? "(none)")
        }
        let following = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(redirectConfiguration: .follow(max: 3, allowCycles: false))
        )
        let cookies = CookieStore()
        let client = CachingHTTPClient(cache: nil, cookies: cookies, httpClient: following)
        let landed: String
        let back: String
        do {
            landed = try await fetch(client, get(first, "/go"))
            back = try await fetch(client, get(first, "/me"))
        } catch {
            try await following.shutdown()
            await first.stop()
            await second.stop()
            throw error
        }
        try await following.shutdown()
        await first.stop()
        await second.stop()
        #expect(landed == "landed")
        #expect(back == "hop=1")
        #expect(cookies.cookieHeader(for: URL(string: "http://localhost:\(second.port)/")!) == "sid=attacker")
    }
}
