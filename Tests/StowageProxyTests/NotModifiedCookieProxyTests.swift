import Foundation
import HTTPTypes
import NIOHTTP1
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import Testing

/// Through the proxy, in each `--cache-set-cookie` mode (`rules.setCookie`): a 304 that sets a
/// cookie reaches the client whose request was validated, and no other client gets that cookie
/// unless the operator chose to replay cookies (`store`).
@Suite struct NotModifiedCookieProxyTests {
    @Test("the 304's Set-Cookie reaches the validated client and no other", arguments: SetCookieHandling.allCases)
    func cookieReachesItsClientOnly(handling: SetCookieHandling) async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.rules.setCookie = handling },
            script: { r in
                if r.head.headerFields[.ifNoneMatch] == "\"e1\"" {
                    let user = r.head.headerFields[HTTPField.Name("X-User")!] ?? "nobody"
                    return .init(
                        status: 304,
                        fields: [("ETag", "\"e1\""), ("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=\(user)")]
                    )
                }
                return .init(fields: [("Cache-Control", "no-cache"), ("ETag", "\"e1\"")], body: "body")
            }
        ) { h in
            _ = try await h.get("/p", headers: [("X-User", "first")])
            let alice = try await h.get("/p", headers: [("X-User", "alice")])
            #expect(alice.status == 200 && alice.text == "body")
            #expect(alice.headers["Set-Cookie"] == ["sid=alice"], "\(handling): \(alice.headers)")
            #expect(alice.cacheStatus.contains("fwd-status=304"), "\(alice.cacheStatus)")

            let bob = try await h.get("/p", headers: [("X-User", "bob")])
            #expect(bob.text == "body")
            switch handling {
            case .doNotStore:
                // Not freshened by alice's validation: bob validates and gets his own cookie.
                #expect(bob.headers["Set-Cookie"] == ["sid=bob"], "\(bob.headers)")
                #expect(h.origin.requestCount == 3)
            case .storeWithoutCookie:
                #expect(bob.cacheStatus.hasPrefix("stowage; hit"), "\(bob.cacheStatus)")
                #expect(bob.headers["Set-Cookie"].isEmpty, "alice's cookie is not replayed: \(bob.headers)")
            case .store:
                #expect(bob.cacheStatus.hasPrefix("stowage; hit"), "\(bob.cacheStatus)")
                #expect(bob.headers["Set-Cookie"] == ["sid=alice"], "replayed, as the operator chose")
            }
        }
    }
}
