import Foundation
import HTTPTypes
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

@testable import StowageProxy

/// The nginx-style controls an operator sets, through the real proxy on loopback.
@Suite struct OperatorControlsTests {
    @Test("proxy_cache_valid: a lifetime by status stores what the origin gave no freshness (404 → 60 s)")
    func lifetimesByStatus() async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.rules.defaultLifetimes = [404: .seconds(60), 302: .seconds(60)] },
            // No Location: the test's client would follow it.
            script: { r in .init(status: r.head.path == "/moved" ? 302 : 404, body: "v\(r.index)") }
        ) { h in
            _ = try await h.get("/missing")
            let hit = try await h.get("/missing")
            #expect(hit.status == 404 && hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            _ = try await h.get("/moved")
            #expect(
                try await h.get("/moved").text == "v2",
                "302 is not heuristically cacheable; the lifetime makes it so"
            )
            #expect(h.origin.requestCount == 2)
        }
        // Without it, the same 404 (no Last-Modified, no freshness) is fetched every time.
        try await ProxyHarness.run(script: { r in .init(status: 404, body: "v\(r.index)") }) { h in
            _ = try await h.get("/missing")
            #expect(try await h.get("/missing").text == "v2")
        }
    }

    @Test(
        "proxy_cache_use_stale error http_5xx: within the grace a stale response is served on a 503, must-revalidate or not"
    )
    func staleIfErrorGrace() async throws {
        let script: TestOriginServer.Script = { r in
            r.index == 1
                ? .init(fields: [("Cache-Control", "max-age=1, must-revalidate")], body: "v1")
                : .init(status: 503, body: "down")
        }
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: {
                $0.cache.rules.staleIfErrorGrace = .seconds(3_600)
                $0.cache.clock = clock.cacheClock
            },
            script: script
        ) { h in
            _ = try await h.get("/page")
            clock.advance(by: .seconds(2))
            let stale = try await h.get("/page")
            #expect(stale.status == 200 && stale.text == "v1")
            #expect(stale.cacheStatus.contains("fwd-status=503"), "\(stale.cacheStatus)")
        }
        let laterClock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(configure: { $0.cache.clock = laterClock.cacheClock }, script: script) { h in
            _ = try await h.get("/page")
            laterClock.advance(by: .seconds(2))
            #expect(try await h.get("/page").status == 503, "without the grace must-revalidate forbids it")
        }
    }

    @Test("proxy_cache_use_stale updating + background_update: stale is served at once and refreshed behind it")
    func staleWhileUpdating() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: {
                $0.cache.rules.staleWhileUpdatingGrace = .seconds(3_600)
                $0.cache.clock = clock.cacheClock
            },
            script: { r in .init(fields: [("Cache-Control", "max-age=1")], body: "v\(r.index)") }
        ) { h in
            _ = try await h.get("/feed")
            clock.advance(by: .seconds(2))
            let stale = try await h.get("/feed")
            #expect(stale.text == "v1")
            #expect(stale.cacheStatus.hasPrefix("stowage; hit"), "served from the cache: \(stale.cacheStatus)")
            #expect((stale.headers["Age"].first.flatMap { Int($0) } ?? 0) >= 2, "the stale copy, two seconds old")
            // The refresh runs behind the stale answer; its event is the proxy serving it.
            try await eventually { try await h.get("/feed").text == "v2" }
        }
    }
}

/// Keys and bypass, through the real proxy.
@Suite struct ProxyKeyAndBypassTests {
    @Test("proxy_cache_key: tracking parameters and parameter order do not split entries")
    func keyRules() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.cache.rules.keyRules = CacheKeyRules(ignoredQueryParameters: ["utm_*"], sortsQueryParameters: true)
            },
            script: versioned(maxAge: 60)
        ) { h in
            _ = try await h.get("/list?page=2&sort=new&utm_source=mail")
            let hit = try await h.get("/list?sort=new&page=2&utm_campaign=x")
            #expect(hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(try await h.get("/list?page=3&sort=new").text == "v2", "other values are other entries")
            #expect(h.origin.requestCount == 2)
        }
    }

    @Test("ignored query parameters never reach the origin, so an origin that reflects them cannot poison the entry")
    func ignoredParametersDoNotPoison() async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.rules.keyRules = CacheKeyRules(ignoredQueryParameters: ["utm_*"]) },
            // The origin echoes its whole request target into the body, as a reflecting page does.
            script: { r in .init(fields: [("Cache-Control", "max-age=60")], body: r.head.path ?? "") }
        ) { h in
            let first = try await h.get("/page?id=1&utm_source=%3Cscript%3E")
            #expect(first.text == "/page?id=1", "the origin saw no utm_ parameter")
            let hit = try await h.get("/page?id=1&utm_source=clean")
            #expect(hit.text == "/page?id=1" && hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(h.origin.requests.allSatisfy { $0.path?.contains("utm_") == false })
        }
    }

    @Test("proxy_cache_min_uses: a response is stored from the Nth request on")
    func minimumUses() async throws {
        try await ProxyHarness.run(configure: { $0.cache.minimumUses = 2 }, script: versioned(maxAge: 60)) { h in
            #expect(try await h.get("/popular").text == "v1")
            #expect(try await h.get("/popular").text == "v2", "first request: not stored")
            let hit = try await h.get("/popular")
            #expect(hit.text == "v2" && hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(h.origin.requestCount == 2)
        }
    }

    @Test("maximum body size: a larger body is forwarded, not stored; a smaller one is")
    func maximumBodySize() async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.maximumBodySize = ByteCount(1_000) },
            script: { r in
                .init(
                    fields: [("Cache-Control", "max-age=60")],
                    body: String(
                        repeating: r.head.path == "/big" ? "x" : "y",
                        count: r.head.path == "/big" ? 2_000 : 500
                    )
                )
            }
        ) { h in
            _ = try await h.get("/big")
            _ = try await h.get("/big")
            #expect(h.origin.requestCount(path: "/big") == 2)
            _ = try await h.get("/small")
            let small = try await h.get("/small")
            #expect(small.text.count == 500 && small.cacheStatus.hasPrefix("stowage; hit"))
        }
    }

    @Test(
        "key headers: a response stored for one X-Tenant is never served to another, and a purge of the URL removes every tenant's"
    )
    func keyHeaders() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.cache.rules.keyRules.headers = [HTTPField.Name("X-Tenant")!]
                $0.admin = .init(port: 0)
            },
            script: { r in
                .init(
                    fields: [("Cache-Control", "max-age=60")],
                    body: "\(r.head.headerFields[HTTPField.Name("X-Tenant")!] ?? "none")-v\(r.index)"
                )
            }
        ) { h in
            #expect(try await h.get("/page", headers: [("X-Tenant", "a")]).text == "a-v1")
            #expect(try await h.get("/page", headers: [("X-Tenant", "b")]).text == "b-v2")
            #expect(try await h.get("/page").text == "none-v3", "absent matches only absent")
            let hit = try await h.get("/page", headers: [("X-Tenant", "a")])
            #expect(hit.text == "a-v1" && hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(try await h.get("/page", headers: [("X-Tenant", "b")]).text == "b-v2")
            #expect(h.origin.requestCount == 3)

            let admin = try ProxyAdminClient(address: "127.0.0.1:\(h.adminPort ?? 0)")
            #expect(try await admin.invalidate(url: h.origin.baseURL + "/page"))
            #expect(try await h.get("/page", headers: [("X-Tenant", "a")]).text == "a-v4")
            #expect(try await h.get("/page", headers: [("X-Tenant", "b")]).text == "b-v5")
        }
    }

    @Test("proxy_cache_bypass: a matching request goes to the origin and its response replaces the stored one")
    func bypass() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.cache.bypass = [.header(HTTPField.Name("X-Refresh")!), .cookie("session"), .pathPrefix("/admin/")]
            },
            script: versioned(maxAge: 60)
        ) { h in
            _ = try await h.get("/page")
            #expect(try await h.get("/page", headers: [("X-Refresh", "0")]).text == "v1", "0 does not bypass")
            let bypassed = try await h.get("/page", headers: [("X-Refresh", "1")])
            #expect(bypassed.text == "v2")
            #expect(bypassed.cacheStatus.contains("bypass"), "\(bypassed.cacheStatus)")
            #expect(try await h.get("/page").text == "v2", "the bypassed response was stored")
            #expect(try await h.get("/page", headers: [("Cookie", "theme=dark; session=abc")]).text == "v3")
            _ = try await h.get("/admin/stats")
            #expect(try await h.get("/admin/stats").text == "v5")
        }
    }
}

/// Purge and ban over the admin listener.
@Suite struct AdminListenerTests {
    private static let tagged: TestOriginServer.Script = { r in
        let path = r.head.path ?? "/"
        return .init(
            fields: [("Cache-Control", "max-age=600"), ("Surrogate-Key", path.hasPrefix("/news/") ? "news" : "other")],
            body: "v\(r.index)"
        )
    }

    @Test("POST /purge, /ban?prefix and /ban?tag remove what they name; Surrogate-Key never reaches clients")
    func purgeAndBan() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: Self.tagged) { h in
            for path in ["/news/1", "/news/2", "/img/a", "/about"] {
                let first = try await h.get(path)
                #expect(first.headers["Surrogate-Key"].isEmpty, "stripped")
            }
            let base = "http://127.0.0.1:\(h.origin.port)"
            let banned = try await h.admin(.POST, "/ban?tag=news")
            #expect(banned.status == 200 && banned.text.contains("banned 2"), "\(banned.text)")
            #expect(try await h.get("/news/1").cacheStatus.hasPrefix("stowage; hit") == false)
            #expect(try await h.get("/img/a").cacheStatus.hasPrefix("stowage; hit"))

            let prefix = try await h.admin(
                .POST,
                "/ban?prefix=" + (base + "/img/").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            )
            #expect(prefix.text.contains("banned 1"), "\(prefix.text)")
            #expect(try await h.get("/img/a").cacheStatus.hasPrefix("stowage; hit") == false)

            #expect(try await h.admin(.POST, "/purge?url=\(base)/about").status == 200)
            #expect(try await h.admin(.POST, "/purge?url=\(base)/never").status == 404)
            #expect(try await h.get("/about").cacheStatus.hasPrefix("stowage; hit") == false)

            #expect(try await h.admin(.GET, "/purge?url=\(base)/about").status == 405)
            #expect(try await h.admin(.POST, "/ban").status == 400)
            #expect(try await h.admin(.POST, "/purge?url=/relative").status == 400)
            #expect(try await h.admin(.POST, "/elsewhere").status == 404)
        }
    }

    @Test("with a token, admin requests without it get 401; a non-loopback admin address needs one")
    func token() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0, token: "s3cret") }, script: Self.tagged) {
            h in
            _ = try await h.get("/news/1")
            #expect(try await h.admin(.POST, "/ban?tag=news").status == 401)
            #expect(try await h.admin(.POST, "/ban?tag=news", token: "wrong").status == 401)
            #expect(try await h.admin(.POST, "/ban?tag=news", token: "s3cret").text.contains("banned 1"))
        }
        var open = ProxyConfiguration.AdminListener(host: "0.0.0.0", port: 0)
        #expect {
            try open.validate()
        } throws: { ($0 as? StowageError)?.code == .invalidConfiguration }
        open.token = "t"
        #expect(throws: Never.self) { try open.validate() }
    }

    @Test(
        "AdminListener.validate refuses a token no client can send with a typed error saying what a token may contain",
        arguments: [
            "", " ", "a b", "tok\r\nX: 1", "tok\n", "t\u{0}k", "tök", "=abc", String(repeating: "a", count: 4097),
        ]
    )
    func unsendableTokenIsATypedError(token: String) {
        let listener = ProxyConfiguration.AdminListener(port: 0, token: token)
        let error = #expect(throws: StowageError.self) { try listener.validate() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("RFC 6750 §2.1 b64token") == true, "\(String(describing: error))")
    }

    @Test(
        "AdminListener.validate takes every RFC 6750 b64token",
        arguments: ["t", "s3cret", "Ab0-._~+/", "abc==", "x="]
    )
    func b64TokensAccepted(token: String) {
        #expect(throws: Never.self) {
            try ProxyConfiguration.AdminListener(host: "0.0.0.0", port: 0, token: token).validate()
        }
    }

    @Test("the admin token comparison matches exactly the right field, whatever the lengths")
    func tokenComparison() {
        #expect(AdminHandler.isToken("Bearer s3cret", equalTo: "s3cret"))
        for field in [
            "", "Bearer ", "Bearer s3cre", "Bearer s3crett", "Bearer s3creT", "bearer s3cret", "s3cret",
            "Bearer s3cretBearer s3cret", "Bearer s3cret ",
        ] {
            #expect(!AdminHandler.isToken(field, equalTo: "s3cret"), "\(field.debugDescription)")
        }
    }

    @Test("the admin listener marks every answer and challenges a request without the token (RFC 6750 §3)")
    func adminAnswersAreMarked() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0, token: "s3cret") }, script: Self.tagged) {
            h in
            let missing = try await h.admin(.POST, "/ban?tag=news")
            #expect(missing.status == 401)
            #expect(missing.headers["Stowage-Admin"] == ["1"])
            #expect(missing.headers["WWW-Authenticate"] == [#"Bearer realm="stowage-admin""#])
            let wrong = try await h.admin(.POST, "/ban?tag=news", token: "wrong")
            #expect(wrong.headers["WWW-Authenticate"].first?.contains(#"error="invalid_token""#) == true)
            #expect(try await h.admin(.POST, "/ban?tag=news", token: "s3cret").headers["Stowage-Admin"] == ["1"])
            #expect(try await h.admin(.POST, "/elsewhere", token: "s3cret").headers["Stowage-Admin"] == ["1"])
        }
    }

    @Test(
        "ProxyAdminClient purges, bans by tag and prefix with counts, and gives typed errors for a wrong token or no listener"
    )
    func adminClient() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0, token: "s3cret") }, script: Self.tagged) {
            h in
            for path in ["/news/1", "/news/2", "/img/a", "/img/b", "/about"] { _ = try await h.get(path) }
            let address = "127.0.0.1:\(h.adminPort ?? 0)"
            let admin = try ProxyAdminClient(address: address, token: "s3cret")
            #expect(try await admin.invalidate(tag: "news") == 2)
            #expect(try await admin.invalidate(urlPrefix: h.origin.baseURL + "/img/") == 2)
            #expect(try await admin.invalidate(urlPrefix: h.origin.baseURL + "/img/") == 0)
            #expect(try await admin.invalidate(url: h.origin.baseURL + "/about"))
            #expect(try await admin.invalidate(url: h.origin.baseURL + "/about") == false)
            #expect(h.origin.requestCount == 5)
            _ = try await h.get("/about")
            #expect(h.origin.requestCount == 6, "purged, so fetched again")

            let wrong = try ProxyAdminClient(address: address, token: "wrong")
            let refused = await #expect(throws: StowageError.self) { try await wrong.invalidate(tag: "news") }
            #expect(
                refused?.code == .refused && refused?.message.contains("401") == true,
                "\(String(describing: refused))"
            )
        }
        // Port 1 on loopback: nothing listens there.
        let nobody = try ProxyAdminClient(address: "127.0.0.1:1", timeout: .seconds(5))
        let unreachable = await #expect(throws: StowageError.self) {
            try await nobody.invalidate(url: "http://example.com/")
        }
        #expect(unreachable?.code == .unreachable)
        #expect(throws: StowageError.self) { try ProxyAdminClient(address: "no-port") }
    }
}
