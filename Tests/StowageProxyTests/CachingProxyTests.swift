import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Testing

/// The proxy end to end: real client → proxy → real origin, all on 127.0.0.1.
@Suite struct CachingProxyTests {
    @Test(
        "§4.3.4 through the proxy: a 304 updates the returned and the stored fields, and the origin's Date is served"
    )
    func updateOn304() async throws {
        // The proxy's cache reads a clock the test moves: max-age=1 runs out when the test says,
        // not when a loaded machine gets round to it. It starts at the real time, as the origin's
        // Date does.
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: { $0.cache.clock = clock.cacheClock },
            script: { r in
                if r.head.headerFields[.ifNoneMatch] == "\"e1\"" {
                    return .init(
                        status: 304,
                        fields: [("Cache-Control", "max-age=3600"), ("ETag", "\"e1\""), ("X-Test", "B")]
                    )
                }
                return .init(
                    fields: [("Cache-Control", "max-age=1"), ("ETag", "\"e1\""), ("X-Test", "A")],
                    body: "body"
                )
            }
        ) { h in
            let first = try await h.get("/page")
            #expect(first.headers["X-Test"] == ["A"])
            clock.advance(by: .seconds(2))
            let validated = try await h.get("/page")
            #expect(validated.status == 200 && validated.text == "body")
            #expect(validated.headers["X-Test"] == ["B"], "returned: \(validated.headers)")
            #expect(validated.cacheStatus.contains("fwd-status=304"), "\(validated.cacheStatus)")
            let hit = try await h.get("/page")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"), "\(hit.cacheStatus)")
            #expect(hit.headers["X-Test"] == ["B"], "stored: \(hit.headers)")
            #expect(hit.headers["Date"] == validated.headers["Date"], "the 304's Date, not the proxy's clock")
            #expect(h.origin.requestCount == 2)
        }
    }

    @Test("A cacheable response is served from the cache with Age and Cache-Status; the origin sees one request")
    func hitWithAgeAndCacheStatus() async throws {
        try await ProxyHarness.run(script: versioned(maxAge: 60, prefix: "v")) { h in
            let miss = try await h.get("/a")
            #expect(miss.text == "v1")
            #expect(miss.cacheStatus.contains("fwd=uri-miss"))
            #expect(miss.cacheStatus.contains("stored"))
            let hit = try await h.get("/a")
            #expect(hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"))
            #expect(hit.headers["Age"].first != nil)
            #expect(h.origin.requestCount(path: "/a") == 1)
        }
    }

    @Test("§4.2.1 shared cache: s-maxage wins over max-age")
    func sharedMaxAge() async throws {
        try await ProxyHarness.run(script: { r in
            .init(fields: [("Cache-Control", "max-age=0, s-maxage=60")], body: "v\(r.index)")
        }) { h in
            _ = try await h.get("/s")
            #expect(try await h.get("/s").text == "v1")
            #expect(h.origin.requestCount == 1)
        }
    }

    @Test("RFC 9213 §2.2 the proxy follows CDN-Cache-Control over Cache-Control: no-store, and forwards it")
    func cdnCacheControl() async throws {
        try await ProxyHarness.run(script: { r in
            .init(fields: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=60")], body: "v\(r.index)")
        }) { h in
            _ = try await h.get("/cdn")
            let hit = try await h.get("/cdn")
            #expect(hit.text == "v1")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"))
            #expect(hit.headers["CDN-Cache-Control"].first == "max-age=60")
            #expect(hit.headers["Cache-Control"].first == "no-store", "browsers still get the origin's Cache-Control")
            #expect(h.origin.requestCount == 1)
        }
    }

    @Test("RFC 9213 §2.1 a targeted field of the operator's own goes first; with none configured Cache-Control rules")
    func ownTargetedField() async throws {
        let script: TestOriginServer.Script = { r in
            .init(
                fields: [
                    ("Cache-Control", "max-age=60"), ("Stowage-Cache-Control", "no-store"),
                    ("CDN-Cache-Control", "max-age=60"),
                ],
                body: "v\(r.index)"
            )
        }
        try await ProxyHarness.run(
            configure: {
                $0.cache.rules.targetedFields = [HTTPField.Name("Stowage-Cache-Control")!, CacheRules.cdnCacheControl]
            },
            script: script
        ) { h in
            _ = try await h.get("/own")
            #expect(try await h.get("/own").text == "v2", "Stowage-Cache-Control: no-store wins")
        }
        try await ProxyHarness.run(
            configure: { $0.cache.rules.targetedFields = [] },
            script: { r in
                .init(
                    fields: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=60")],
                    body: "v\(r.index)"
                )
            }
        ) { h in
            _ = try await h.get("/plain")
            #expect(try await h.get("/plain").text == "v2", "no targeted fields: Cache-Control: no-store rules")
        }
    }

    @Test("§5.2.2.7 a private response is not stored by the proxy")
    func privateNotShared() async throws {
        try await ProxyHarness.run(script: { r in
            .init(fields: [("Cache-Control", "private, max-age=60")], body: "v\(r.index)")
        }) { h in
            _ = try await h.get("/p")
            #expect(try await h.get("/p").text == "v2")
        }
    }

    @Test("§3.5 a request with Authorization is not answered from the shared cache")
    func authorization() async throws {
        try await ProxyHarness.run(script: versioned(maxAge: 60, prefix: "v")) { h in
            _ = try await h.get("/auth", headers: [("Authorization", "Bearer a")])
            _ = try await h.get("/auth", headers: [("Authorization", "Bearer a")])
            #expect(h.origin.requestCount == 2)
        }
    }

    @Test("ETag validation through the proxy: a 304 from the origin is a 200 to a plain client")
    func validation() async throws {
        try await ProxyHarness.run(script: { r in
            if r.head.headerFields[.ifNoneMatch] == "\"e1\"" { return .init(status: 304, fields: [("ETag", "\"e1\"")]) }
            return .init(fields: [("Cache-Control", "no-cache"), ("ETag", "\"e1\"")], body: "body")
        }) { h in
            _ = try await h.get("/v")
            let second = try await h.get("/v")
            #expect(second.status == 200)
            #expect(second.text == "body")
            #expect(second.cacheStatus.contains("fwd-status=304"))
            let conditional = try await h.get("/v", headers: [("If-None-Match", "\"e1\"")])
            #expect(conditional.status == 304)
        }
    }

    @Test(
        "§4.3.4 through the proxy: a 304 whose strong ETag matches nothing stored updates nothing, and the origin sees one request per client request"
    )
    func mismatchedETagOn304() async throws {
        // The origin of cache-tests' 304-etag-update-response-ETag: it answers the cache's
        // If-None-Match: "a" with a 304 carrying ETag: "b".
        try await ProxyHarness.run(script: { r in
            if r.head.headerFields[.ifNoneMatch] != nil {
                return .init(status: 304, fields: [("Cache-Control", "no-cache"), ("ETag", "\"b\""), ("X-Test", "B")])
            }
            return .init(fields: [("Cache-Control", "no-cache"), ("ETag", "\"a\""), ("X-Test", "A")], body: "body")
        }) { h in
            _ = try await h.get("/etag")
            let validated = try await h.get("/etag")
            #expect(validated.status == 200 && validated.text == "body")
            #expect(validated.cacheStatus.contains("fwd-status=304"), "\(validated.cacheStatus)")
            #expect(validated.headers["ETag"] == ["\"a\""], "served as stored: \(validated.headers)")
            #expect(validated.headers["X-Test"] == ["A"])
            // Without a second, unconditional request for the same client request.
            #expect(h.origin.requestCount == 2, "\(h.origin.requests)")
            _ = try await h.get("/etag")
            #expect(h.origin.requestCount == 3)
            #expect(h.origin.requests.last?.headerFields[.ifNoneMatch] == "\"a\"", "the stored response kept its ETag")
        }
    }

    @Test("With sendsTrace, Stowage-Cache-Trace says why a response was not stored; without it, nothing is sent")
    func traceHeader() async throws {
        try await ProxyHarness.run(
            sendsTrace: true,
            script: { _ in
                .init(fields: [("Cache-Control", "private, max-age=60")], body: "mine")
            }
        ) { h in
            let reply = try await h.get("/p")
            let trace = reply.headers["Stowage-Cache-Trace"].first ?? ""
            #expect(
                trace.contains("not stored: section 5.2.2.7 private responses are not stored by a shared cache"),
                "\(trace)"
            )
        }
        try await ProxyHarness.run(script: { _ in .init(fields: [("Cache-Control", "max-age=60")], body: "x") }) { h in
            let reply = try await h.get("/q")
            #expect(reply.headers["Stowage-Cache-Trace"].isEmpty)
        }
    }

    @Test("Request collapsing: 30 concurrent requests for one uncached URL make one upstream request")
    func collapsing() async throws {
        try await ProxyHarness.run(script: { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "once", delay: .milliseconds(300))
        }) { h in
            let replies = try await withThrowingTaskGroup(of: ProxyHarness.Reply.self) { group in
                for _ in 0..<30 { group.addTask { try await h.get("/c") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.allSatisfy { $0.text == "once" && $0.status == 200 })
            #expect(h.origin.requestCount(path: "/c") == 1)
            // The others waited for that fetch (collapsed) or came after it was stored (hit).
            #expect(replies.filter { $0.cacheStatus.hasPrefix("stowage; hit") }.count == 29)
        }
    }

    @Test("An uncacheable response is never collapsed: concurrent requests each reach the origin")
    func uncacheableNotShared() async throws {
        try await ProxyHarness.run(script: { r in
            .init(fields: [("Cache-Control", "no-store")], body: "v\(r.index)", delay: .milliseconds(100))
        }) { h in
            let replies = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<5 { group.addTask { try await h.get("/u").text } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(replies.count == 5)
        }
    }

    @Test("An unreachable upstream is a 502 that says so")
    func badGateway() async throws {
        try await ProxyHarness.run(originDown: true, script: { _ in .init() }) { h in
            let reply = try await h.get("/down")
            #expect(reply.status == 502)
            #expect(reply.text.contains("could not be reached"))
            // RFC 9110 §6.6.1: the proxy's own answers carry its Date.
            #expect(reply.headers["Date"].count == 1)
            #expect(reply.headers["Date"].first.flatMap { HTTPDate.parseStrict($0) } != nil)
        }
    }

    @Test("RFC 9110 §6.6.1: the Date the proxy adds to its own answers comes from the cache's clock")
    func ownAnswersDatedByCacheClock() async throws {
        let clock = ManualClock()
        try await ProxyHarness.run(
            originDown: true,
            configure: { $0.cache.clock = clock.cacheClock },
            script: { _ in .init() }
        ) { h in
            let reply = try await h.get("/down")
            #expect(reply.status == 502)
            #expect(reply.headers["Date"] == [HTTPDate.format(Int64(clock.secondsSince1970))])
        }
    }

    @Test("An upstream slower than the timeout is a 504")
    func gatewayTimeout() async throws {
        try await ProxyHarness.run(
            upstreamTimeout: .seconds(1),
            script: { _ in .init(body: "late", delay: .seconds(3)) }
        ) { h in
            let reply = try await h.get("/slow")
            #expect(reply.status == 504)
        }
    }

    @Test("RFC 5861 stale-if-error: with the upstream failing, the stale response is served instead of 502")
    func staleIfError() async throws {
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: { $0.cache.clock = clock.cacheClock },
            script: { r in
                if r.index == 1 {
                    return .init(fields: [("Cache-Control", "max-age=1, stale-if-error=600")], body: "old")
                }
                return .init(status: 503, body: "broken")
            }
        ) { h in
            _ = try await h.get("/e")
            clock.advance(by: .seconds(2))
            let reply = try await h.get("/e")
            #expect(reply.status == 200)
            #expect(reply.text == "old")
            #expect(reply.cacheStatus.contains("fwd-status=503"))
        }
    }

    @Test("A malformed request is answered with 400")
    func badRequest() async throws {
        try await ProxyHarness.run(script: { _ in .init() }) { h in
            let port = h.proxyPort
            let reply = try await RawSocket.exchange(
                "GET /x HTTP/1.1\r\nHost: a\r\nBad Header Line\r\n\r\n",
                port: port
            )
            #expect(reply?.head.hasPrefix("HTTP/1.1 400") == true)
            #expect(h.origin.requestCount == 0)
        }
    }

    @Test("Keep-alive: three requests on one connection, answered in order")
    func keepAlive() async throws {
        try await ProxyHarness.run(script: versioned(maxAge: 60, prefix: "r")) { h in
            let port = h.proxyPort
            let bodies = try await onOwnThread { () -> [String] in
                let socket = try RawSocket(port: port)
                var bodies: [String] = []
                for path in ["/k1", "/k2", "/k1"] {
                    socket.send("GET \(path) HTTP/1.1\r\nHost: proxy\r\n\r\n")
                    bodies.append(socket.readResponse()?.body ?? "closed")
                }
                return bodies
            }
            #expect(bodies == ["r1", "r2", "r1"])
        }
    }

    @Test("A 20 MB body streams through on a miss and back from disk on a hit")
    func largeBody() async throws {
        let payload = patternedBytes(20_000_000, seed: 5)
        // Fresh for an hour of the real clock; stored by the time the client has the last byte.
        try await ProxyHarness.run(script: { _ in .init(fields: [("Cache-Control", "max-age=3600")], bytes: payload) })
        {
            h in
            #expect(try await h.get("/big").body == payload)
            let hit = try await h.get("/big")
            #expect(hit.body == payload)
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"))
            #expect(h.origin.requestCount == 1)
        }
    }

    @Test("§4.4 a POST through the proxy reaches the origin with its body and invalidates the cached GET")
    func postInvalidates() async throws {
        try await ProxyHarness.run(script: { r in
            if r.head.method == .post { return .init(status: 200, body: "got \(r.body.count)") }
            return .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }) { h in
            _ = try await h.get("/item")
            let posted = try await h.get("/item", method: .POST, body: Array("12345".utf8))
            #expect(posted.text == "got 5")
            #expect(try await h.get("/item").text == "v3")
        }
    }

    @Test("§4.4 extension methods (PROPFIND, M-SEARCH, PURGE) go to the origin, never a 400; a success invalidates")
    func extensionMethods() async throws {
        try await ProxyHarness.run(script: { r in
            if r.head.method != .get { return .init(status: 207, body: "\(r.head.method.rawValue) reached the origin") }
            return .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }) { h in
            var expectedVersion = 1
            for method in ["PROPFIND", "M-SEARCH", "PURGE"] {
                #expect(try await h.get("/item").text == "v\(expectedVersion)")
                let reply = try await h.get("/item", method: .RAW(value: method))
                // The test origin runs on NIO too, whose decoder names M-SEARCH "MSEARCH"; a 207
                // shows the proxy sent "M-SEARCH" (its parser refuses "MSEARCH" with a 400).
                #expect(reply.status == 207, "\(method)")
                #expect(reply.text == "\(method.replacingOccurrences(of: "-", with: "")) reached the origin")
                // The success invalidated the stored GET: the next one goes to the origin.
                expectedVersion += 2
                #expect(try await h.get("/item").text == "v\(expectedVersion)", "after \(method)")
            }
        }
    }

    @Test("RFC 9110 §6.6.1 the stored Date reaches the client on a hit, not the proxy's clock")
    func originDatePreserved() async throws {
        // The test origin (a Hummingbird application) stamps its own clock on every response; the
        // proxy's cache reads a clock the test moves.
        let clock = ManualClock(startingAt: Date())
        try await ProxyHarness.run(
            configure: { $0.cache.clock = clock.cacheClock },
            script: { r in
                .init(fields: [("Cache-Control", "max-age=3600")], body: "d")
            }
        ) { h in
            let miss = try await h.get("/dated")
            let originDate = try #require(miss.headers["Date"].first)
            // Past the next second, so the proxy's clock would show.
            clock.advance(by: .seconds(2))
            let hit = try await h.get("/dated")
            #expect(hit.cacheStatus.hasPrefix("stowage; hit"))
            #expect(hit.headers["Date"] == [originDate], "the stored Date, with Age saying how old it is")
            #expect(Int(hit.headers["Age"].first ?? "") ?? 0 >= 1)
        }
    }

    @Test("HEAD is answered from the cached GET without a body")
    func head() async throws {
        try await ProxyHarness.run(script: { r in .init(fields: [("Cache-Control", "max-age=60")], body: "hello") }) {
            h in
            _ = try await h.get("/h")
            let head = try await h.get("/h", method: .HEAD)
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.cacheStatus.hasPrefix("stowage; hit"))
            #expect(h.origin.requestCount == 1)
        }
    }

    @Test("Configuration errors name the bad value")
    func configurationErrors() throws {
        #expect(throws: StowageError.self) { try ProxyConfiguration.Upstream(parsing: "ftp://x") }
        #expect(throws: StowageError.self) { try ProxyConfiguration.Upstream(parsing: "127.0.0.1:8000") }
        #expect(throws: StowageError.self) { try ProxyConfiguration.parseListenAddress("127.0.0.1") }
        #expect(throws: StowageError.self) { try ProxyConfiguration.parseListenAddress("127.0.0.1:70000") }
        let listen = try ProxyConfiguration.parseListenAddress("[::1]:8080")
        #expect(listen.host == "::1" && listen.port == 8080)
        #expect(try ProxyConfiguration.Upstream(parsing: "http://h:1/base/").basePath == "/base")
    }
}
