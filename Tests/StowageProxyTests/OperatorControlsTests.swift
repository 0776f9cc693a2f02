import Foundation
import HTTPTypes
import NIOHTTP1
import StowageHTTPTestSupport
import StowageProxy
import Testing

/// The nginx-style controls an operator sets, through the real proxy on loopback.
@Suite struct OperatorControlsTests {
    @Test("proxy_cache_valid: a lifetime by status stores what the origin gave no freshness (404 → 60 s)")
    func lifetimesByStatus() async throws {
        try await ProxyHarness.run(
            configure: { $0.defaultLifetimes = [404: 60, 302: 60] },
            // No Location: the test's client would follow it.
            script: { r in .init(status: r.head.path == "/moved" ? 302 : 404, body: "v\(r.index)") }
        ) { h in
            _ = try await h.get("/missing")
            let hit = try await h.get("/missing")
            #expect(hit.status == 404 && hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            _ = try await h.get("/moved")
            #expect(try await h.get("/moved").text == "v2", "302 is not heuristically cacheable; the lifetime makes it so")
            #expect(h.origin.requestCount == 2)
        }
        // Without it, the same 404 (no Last-Modified, no freshness) is fetched every time.
        try await ProxyHarness.run(script: { r in .init(status: 404, body: "v\(r.index)") }) { h in
            _ = try await h.get("/missing")
            #expect(try await h.get("/missing").text == "v2")
        }
    }

    @Test("proxy_cache_use_stale error http_5xx: within the grace a stale response is served on a 503, must-revalidate or not")
    func staleIfErrorGrace() async throws {
        let script: TestOriginServer.Script = { r in
            r.index == 1
                ? .init(fields: [("Cache-Control", "max-age=1, must-revalidate")], body: "v1")
                : .init(status: 503, body: "down")
        }
        try await ProxyHarness.run(configure: { $0.staleIfErrorGrace = 3_600 }, script: script) { h in
            _ = try await h.get("/page")
            try await Task.sleep(for: .milliseconds(2_100))
            let stale = try await h.get("/page")
            #expect(stale.status == 200 && stale.text == "v1")
            #expect(stale.cacheStatus.contains("fwd-status=503"), "\(stale.cacheStatus)")
        }
        try await ProxyHarness.run(script: script) { h in
            _ = try await h.get("/page")
            try await Task.sleep(for: .milliseconds(2_100))
            #expect(try await h.get("/page").status == 503, "without the grace must-revalidate forbids it")
        }
    }

    @Test("proxy_cache_use_stale updating + background_update: stale is served at once and refreshed behind it")
    func staleWhileUpdating() async throws {
        try await ProxyHarness.run(
            configure: { $0.staleWhileUpdatingGrace = 3_600 },
            script: { r in .init(fields: [("Cache-Control", "max-age=1")], body: "v\(r.index)") }
        ) { h in
            _ = try await h.get("/feed")
            try await Task.sleep(for: .milliseconds(2_100))
            let stale = try await h.get("/feed")
            #expect(stale.text == "v1")
            #expect(stale.cacheStatus.hasPrefix("stowage; hit"), "served from the cache: \(stale.cacheStatus)")
            #expect((stale.headers["Age"].first.flatMap { Int($0) } ?? 0) >= 2, "the stale copy, two seconds old")
            var refreshed = ""
            for _ in 0..<50 where refreshed != "v2" {
                try await Task.sleep(for: .milliseconds(20))
                refreshed = try await h.get("/feed").text
            }
            #expect(refreshed == "v2")
        }
    }
}
