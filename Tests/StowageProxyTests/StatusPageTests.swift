import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Prometheus
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import StowageTesting
import Testing

@testable import StowageProxy

/// The admin listener's status page (`GET /`, `/status.js`, `/status.css`, `/status.json`),
/// through the real proxy on loopback in front of a real origin.
@Suite struct StatusPageTests {
    // MARK: The status document

    @Test("/status.json counts a miss then a hit, their bytes, a purge, and the cache's capacities")
    func statusReflectsTraffic() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: versioned(maxAge: 60)) { h in
            // Given: nothing requested yet.
            let before = try await h.status()
            #expect(before.requests.total == 0)
            #expect(before.hitRatio.ratio == nil && before.hitRatio.cacheableLookups == 0)
            #expect(before.upstreamLatency == nil, "no upstream request yet")
            // When: a miss, a hit and a purge.
            #expect(try await h.get("/page").text == "v1")
            let hit = try await h.get("/page")
            #expect(hit.text == "v1" && hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            let url = h.origin.baseURL + "/page"
            #expect(try await h.admin(.POST, "/purge?url=\(url)").status == 200)
            // Then
            let status = try await h.status()
            #expect(status.version == 1)
            #expect(status.upstream == h.origin.baseURL)
            #expect(status.requests.total == 2)
            #expect(status.requests.byOutcome == .init(hit: 1, stale: 0, revalidated: 0, miss: 1, bypass: 0))
            #expect(status.requests.upstreamErrors == 0)
            #expect(status.hitRatio == .init(ratio: 0.5, hits: 1, cacheableLookups: 2))
            #expect(status.bytesServed == .init(fromCache: 2, fromUpstream: 2), "\"v1\" once from each")
            #expect(status.cache.memory.capacityBytes == 32_000_000)
            #expect(status.cache.disk?.capacityBytes == 400_000_000)
            #expect(status.cache.memory.entries != nil && status.cache.disk?.entries != nil)
            let latency = try #require(status.upstreamLatency)
            #expect(latency.samples == 1)
            #expect(latency.p50Milliseconds > 0 && latency.p50Milliseconds <= latency.p99Milliseconds)
            #expect(status.sharedTier == nil, "no shared tier configured")
            #expect(status.recentInvalidations.count == 1)
            let purge = try #require(status.recentInvalidations.first)
            #expect(purge.kind == "url" && purge.target == url && purge.removed == 1)
            #expect(status.uptimeSeconds >= 0 && status.generatedAt >= status.startedAt)
        }
    }

    @Test("/status.json spells every documented field, and leaves out the shared tier when none is configured")
    func fieldNames() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: versioned(maxAge: 60)) { h in
            _ = try await h.get("/a")
            let reply = try await h.admin(.GET, "/status.json")
            #expect(reply.status == 200)
            #expect(reply.headers["Content-Type"] == ["application/json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
            #expect(
                Set(object.keys) == [
                    "version", "generatedAt", "startedAt", "uptimeSeconds", "upstream", "requests", "hitRatio",
                    "bytesServed", "cache", "upstreamLatency", "recentInvalidations",
                ]
            )
            let requests = try #require(object["requests"] as? [String: Any])
            #expect(
                Set(requests.keys).isSuperset(of: [
                    "total", "perSecondSinceStart", "upstreamErrors", "byOutcome",
                ])
            )
            let latency = try #require(object["upstreamLatency"] as? [String: Any])
            #expect(
                Set(latency.keys) == [
                    "samples", "windowSeconds", "meanMilliseconds", "p50Milliseconds", "p99Milliseconds",
                    "maxMilliseconds",
                ]
            )
        }
    }

    @Test("/status.json shows the spilled answers' file once it is open: hits from it, its bytes, a clear emptying it")
    func spilledAnswers() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.cache.memoryCapacity = SpilledAnswerProxyTests.memoryCapacity
            },
            script: SpilledAnswerProxyTests.script
        ) { h in
            #expect(try await h.status().cache.spill == nil, "no request yet: no file")
            // Given: responses stored, the early ones no longer in memory, none read from disk yet.
            try await SpilledAnswerProxyTests.warm(h)
            #expect(try await h.status().cache.spill?.hits == 0)
            // When: each is read from the disk index (and spilled), then asked for twice more.
            for path in SpilledAnswerProxyTests.paths {
                for _ in 0..<3 { _ = try await h.get(path) }
            }
            // Then
            let cache = try #require(h.cache)
            let spill = try #require(try await h.status().cache.spill)
            #expect(spill.hits >= 1 && spill.hits == cache.spilledAnswerFigures.hits, "\(spill)")
            #expect(spill.bytes > 0 && spill.bytes == cache.spilledAnswerFigures.bytes, "\(spill)")
            #expect(spill.capacityBytes == 400_000_000 / 4, "a quarter of the disk capacity")
            // A clear empties the file; the hits so far stay counted.
            _ = try await cache.removeAll()
            let cleared = try #require(try await h.status().cache.spill)
            #expect(cleared.bytes == 0 && cleared.hits == spill.hits && cleared.capacityBytes == spill.capacityBytes)
        }
    }

    @Test("a hostile purge target is JSON-escaped, kept as text and cut to 256 characters")
    func hostileTarget() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: versioned(maxAge: 60)) { h in
            let hostile =
                "</script><script>alert(\"x\")</script>'\u{01}\u{1B}[31m\n" + String(repeating: "A", count: 20_000)
            let encoded = hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            #expect(try await h.admin(.POST, "/ban?tag=\(encoded)").status == 200)
            for index in 0..<30 {
                #expect(try await h.admin(.POST, "/ban?prefix=https%3A%2F%2Fexample.com%2F\(index)").status == 200)
            }
            #expect(try await h.admin(.POST, "/ban?tag=\(encoded)").status == 200)
            // A purge URL with markup and quotes in its query, as a caller may send one.
            let url = "https://example.com/a?q=</script><script>\"'"
            let purge = try await h.admin(
                .POST,
                "/purge?url=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            )
            #expect(purge.status == 404, "nothing stored, taken all the same: \(purge.text)")
            let reply = try await h.admin(.GET, "/status.json")
            #expect(!reply.body.contains { $0 < 0x20 }, "no raw control character in the JSON")
            #expect(reply.body.count < 20 * 2_000, "20 entries of at most 256 characters each: \(reply.body.count)")
            let status = try ProxyStatus.decode(reply.body)
            #expect(status.recentInvalidations.count == 20, "only the latest 20 are kept")
            let purged = try #require(status.recentInvalidations.first)
            #expect(purged.kind == "url" && purged.target == url && purged.removed == 0)
            let newest = status.recentInvalidations[1]
            #expect(newest.kind == "tag")
            #expect(newest.target.count == RecentInvalidations.maximumTargetLength)
            #expect(newest.target.hasPrefix("</script><script>alert(\"x\")</script>'\u{01}\u{1B}[31m\nAAA"))
            #expect(newest.target.hasSuffix("…"))
            #expect(status.recentInvalidations[2].target == "https://example.com/29", "newest first")
        }
    }

    @Test("/status.json shows the shared tier healthy, then an outage with its start and failures, then healthy again")
    func sharedTierHealth() async throws {
        let level = InMemorySharedLevel()
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.cache.sharedTier = level.node()
            },
            script: versioned(maxAge: 60)
        ) { h in
            _ = try await h.get("/up")
            let healthy = try #require(try await h.status().sharedTier)
            #expect(healthy.healthy && healthy.outageSince == nil && healthy.failures == 0)
            // When: the level goes down and a response is to be shared.
            let wentDown = Date()
            level.goDown(interruptingInvalidations: false)
            _ = try await h.get("/down")
            let outage = try #require(try await h.status().sharedTier)
            #expect(!outage.healthy && outage.failures > 0)
            let since = try #require(outage.outageSince)
            #expect(since >= wentDown.addingTimeInterval(-1), "the outage began after it went down")
            #expect(outage.pendingWrites > 0, "what it missed waits for the replay")
            // When: it answers again.
            level.comeBack(notifying: false)
            _ = try await h.get("/back")
            let back = try #require(try await h.status().sharedTier)
            #expect(back.healthy && back.outageSince == nil)
        }
    }

    // MARK: Access

    @Test("with a token: none is 401 with Bearer and Basic challenges, Bearer or Basic is 200, a wrong one 401")
    func tokenAccess() async throws {
        try await ProxyHarness.run(
            configure: { $0.admin = .init(port: 0, token: "s3cret") },
            script: versioned(maxAge: 60)
        ) {
            h in
            let missing = try await h.admin(.GET, "/status.json")
            #expect(missing.status == 401)
            #expect(missing.headers["Stowage-Admin"] == ["1"])
            #expect(
                missing.headers["WWW-Authenticate"] == [
                    #"Bearer realm="stowage-admin""#, #"Basic realm="stowage-admin", charset="UTF-8""#,
                ]
            )
            #expect(try await h.admin(.GET, "/status.json", token: "s3cret").status == 200)
            #expect(try await h.admin(.GET, "/status.json", authorization: Self.basic("admin", "s3cret")).status == 200)
            #expect(try await h.admin(.GET, "/", authorization: Self.basic("", "s3cret")).status == 200)
            #expect(try await h.admin(.GET, "/status.js", authorization: Self.basic("x", "s3cret")).status == 200)
            #expect(try await h.admin(.GET, "/status.json", token: "wrong").status == 401)
            #expect(try await h.admin(.GET, "/status.json", authorization: Self.basic("admin", "wrong")).status == 401)
            #expect(try await h.admin(.GET, "/status.json", authorization: Self.basic("s3cret", "")).status == 401)
            #expect(try await h.admin(.GET, "/", authorization: "Basic not-base64!").status == 401)
            // Basic credentials a browser remembers go with any site's form POST: never for purge or ban.
            let post = try await h.admin(.POST, "/ban?tag=x", authorization: Self.basic("admin", "s3cret"))
            #expect(post.status == 401)
            #expect(post.headers["WWW-Authenticate"] == [#"Bearer realm="stowage-admin", error="invalid_token""#])
            #expect(try await h.admin(.GET, "/metrics", authorization: Self.basic("admin", "s3cret")).status == 401)
        }
    }

    @Test("without a token, the page answers only an IP address or localhost as Host (DNS rebinding)")
    func hostNames() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: versioned(maxAge: 60)) { h in
            let port = h.adminPort ?? 0
            let rebound = try await h.admin(.GET, "/status.json", host: "attacker.example:\(port)")
            #expect(rebound.status == 421)
            let reboundPage = try await h.admin(.GET, "/", host: "attacker.example")
            #expect(reboundPage.status == 421)
            let named = try await h.admin(.GET, "/status.json", host: "localhost:\(port)")
            #expect(named.status == 200)
            let address = try await h.admin(.GET, "/status.json", host: "127.0.0.1:\(port)")
            #expect(address.status == 200)
        }
        for (authority, literal) in [
            ("127.0.0.1:80", true), ("[::1]:9000", true), ("LOCALHOST", true), ("10.0.0.7", true),
            ("example.com", false), ("127.0.0.1.nip.io", false), ("", false), ("[::1", false), ("1.2.3", false),
        ] {
            #expect(AdminHandler.isLiteralHost(authority) == literal, "\(authority)")
        }
    }

    @Test(
        "without a token, a POST a web page sent (Origin, Sec-Fetch-Site) is refused: no cross-site purge or ban"
    )
    func crossSiteWritesRefused() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: versioned(maxAge: 60)) { h in
            let first = try await h.get("/kept")
            #expect(first.text == "v1")
            let target = "http://127.0.0.1:\(h.origin.port)/kept"
            let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            // What a form on another site sends: a simple POST, never preflighted.
            for headers in [
                [("Origin", "https://attacker.example"), ("Content-Type", "application/x-www-form-urlencoded")],
                [("Origin", "null"), ("Content-Type", "text/plain")],
                [("Sec-Fetch-Site", "cross-site")],
                [("Sec-Fetch-Site", "same-origin"), ("Origin", "http://rebound.example:8080")],
            ] {
                let purge = try await h.admin(.POST, "/purge?url=\(encoded)", headers: headers)
                #expect(purge.status == 403, "\(headers): \(purge.text)")
                let ban = try await h.admin(.POST, "/ban?tag=any", headers: headers)
                #expect(ban.status == 403, "\(headers)")
            }
            #expect(try await h.get("/kept").cacheStatus.hasPrefix("stowage; hit"), "nothing was purged")
            #expect(try await h.status().recentInvalidations.isEmpty)
            // A script (no Origin) and a request typed by the user (Sec-Fetch-Site: none) still work.
            let typed = try await h.admin(.POST, "/purge?url=\(encoded)", headers: [("Sec-Fetch-Site", "none")])
            #expect(typed.status == 200, "\(typed.text)")
            // The page's own GETs carry the fields and are still answered.
            let page = try await h.admin(.GET, "/status.json", headers: [("Sec-Fetch-Site", "same-origin")])
            #expect(page.status == 200)
        }
    }

    @Test("without a token, GET /metrics answers only an IP address or localhost as Host, as the page does")
    func metricsHostNames() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.metricsRegistry = .init()
            },
            script: versioned(maxAge: 60)
        ) { h in
            let port = h.adminPort ?? 0
            let rebound = try await h.admin(.GET, "/metrics", host: "attacker.example:\(port)")
            #expect(rebound.status == 421, "\(rebound.text)")
            let address = try await h.admin(.GET, "/metrics", host: "127.0.0.1:\(port)")
            #expect(address.status == 200)
            let named = try await h.admin(.GET, "/metrics", host: "localhost:\(port)")
            #expect(named.status == 200)
        }
    }

    @Test("a Host with anything after the bracketed IPv6 literal but a port is not a literal host")
    func bracketedHostTail() {
        for authority in ["[::1].attacker.example", "[::1]attacker.example", "[]", "[]:80", "[::1]:"] {
            #expect(AdminHandler.isLiteralHost(authority) == false, "\(authority)")
        }
        for authority in ["[::1]", "[::1]:8080", "[::ffff:127.0.0.1]:1"] {
            #expect(AdminHandler.isLiteralHost(authority), "\(authority)")
        }
    }

    // MARK: The page

    @Test("the page and its resources carry the strict policy, nosniff and no-store; the page has nothing inline")
    func securityHeaders() async throws {
        try await ProxyHarness.run(configure: { $0.admin = .init(port: 0) }, script: versioned(maxAge: 60)) { h in
            for (path, type) in [
                ("/", "text/html; charset=utf-8"), ("/status.js", "text/javascript; charset=utf-8"),
                ("/status.css", "text/css; charset=utf-8"), ("/status.json", "application/json"),
            ] {
                let reply = try await h.admin(.GET, path)
                #expect(reply.status == 200, "\(path)")
                #expect(reply.headers["Content-Type"] == [type], "\(path)")
                #expect(reply.headers["Content-Security-Policy"] == [AdminHandler.contentSecurityPolicy], "\(path)")
                #expect(reply.headers["X-Content-Type-Options"] == ["nosniff"], "\(path)")
                #expect(reply.headers["Cache-Control"] == ["no-store"], "\(path)")
                #expect(reply.headers["Stowage-Admin"] == ["1"], "\(path)")
            }
            #expect(
                AdminHandler.contentSecurityPolicy.hasPrefix("default-src 'none'; script-src 'self'; style-src 'self'")
            )
            #expect(AdminHandler.contentSecurityPolicy.contains("frame-ancestors 'none'"))
            let page = try await h.admin(.GET, "/").text
            #expect(page.contains(#"<script src="/status.js" defer></script>"#))
            #expect(page.contains(#"<link rel="stylesheet" href="/status.css">"#))
            #expect(page.components(separatedBy: "<script").count == 2, "one script element, loaded from /status.js")
            #expect(
                !page.contains("style=") && !page.contains("<style") && !page.contains("http"),
                "nothing inline or remote"
            )
            let script = try await h.admin(.GET, "/status.js").text
            #expect(
                !script.contains("innerHTML") && !script.contains("insertAdjacentHTML")
                    && script.contains("textContent")
            )
            // The other endpoints are as they were.
            #expect(try await h.admin(.POST, "/").status == 405)
            let unknown = try await h.admin(.GET, "/elsewhere")
            #expect(unknown.status == 404 && unknown.text.contains("GET /status.json"), "\(unknown.text)")
        }
    }

    // MARK: Figures

    @Test("latency percentiles are nearest-rank over the samples")
    func latencyPercentiles() throws {
        #expect(ProxyActivity.latency([]) == nil)
        let latency = try #require(ProxyActivity.latency((1...100).map { Duration.milliseconds($0) }))
        #expect(latency.samples == 100)
        #expect(abs(latency.p50Milliseconds - 50) < 1e-6 && abs(latency.p99Milliseconds - 99) < 1e-6)
        #expect(abs(latency.meanMilliseconds - 50.5) < 1e-6 && abs(latency.maxMilliseconds - 100) < 1e-6)
    }

    @Test("requests per second over a window start from the newest sample at least that old")
    func requestRate() throws {
        let clock = SteppedClock()
        let rate = RequestRate(capacity: 4, clock: ElapsedClock(clock))
        #expect(rate.perSecond(requests: 5, over: .seconds(10)) == nil)
        for second in 0..<6 {
            rate.sample(requests: second * 10)
            clock.advance(by: .seconds(1))
        }
        // Kept: seconds 2...5. Over 2 s at second 6: from the sample of second 4 (40 requests).
        let recent = try #require(rate.perSecond(requests: 60, over: .seconds(2)))
        #expect(abs(recent.perSecond - 10) < 1e-9 && abs(recent.seconds - 2) < 1e-9)
        // Over 10 s: none that old is kept; from the oldest kept (second 2, 20 requests).
        let oldest = try #require(rate.perSecond(requests: 60, over: .seconds(10)))
        #expect(abs(oldest.perSecond - 10) < 1e-9 && abs(oldest.seconds - 4) < 1e-9)
    }

    @Test("the status sampler samples the request total once a second of the rate's clock")
    func samplerFollowsTheClock() async throws {
        let clock = SteppedClock()
        let counters = ProxyCounters()
        let rate = RequestRate(clock: ElapsedClock(clock))
        let sampler = Task { try await StatusSampler(counters: counters, rate: rate).run() }
        defer { sampler.cancel() }
        // The first sample at once, then a wait of a second on the clock.
        try await eventually { rate.sampleCount == 1 && clock.sleeperCount == 1 }
        for _ in 0..<20 { counters.record(.hit) }
        #expect(rate.sampleCount == 1, "no second sample before the clock moves")
        clock.advance(by: .seconds(1))
        try await eventually { rate.sampleCount == 2 && clock.sleeperCount == 1 }
        let recent = try #require(rate.perSecond(requests: 20, over: .seconds(1)))
        #expect(recent.perSecond == 20 && recent.seconds == 1)
    }

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }
}

extension ProxyStatus {
    static func decode(_ bytes: [UInt8]) throws -> ProxyStatus {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(ProxyStatus.self, from: Data(bytes))
    }
}

extension ProxyHarness {
    /// `GET /status.json`, decoded.
    func status() async throws -> ProxyStatus {
        let reply = try await admin(.GET, "/status.json")
        try #require(reply.status == 200, "\(reply.text)")
        return try ProxyStatus.decode(reply.body)
    }

    /// Sends `method path` to the admin listener with `authorization` and `host` as given.
    func admin(
        _ method: HTTPMethod,
        _ path: String,
        authorization: String? = nil,
        host: String? = nil,
        headers: [(String, String)] = []
    ) async throws
        -> Reply
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(adminPort ?? 0)" + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        if let host { request.headers.replaceOrAdd(name: "Host", value: host) }
        let response = try await client.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Array(bytes.readableBytesView))
    }
}
