import AsyncHTTPClient
import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

/// The caching client against a real origin on 127.0.0.1, over real sockets.
@Suite struct CachingHTTPClientTests {
    /// Runs `body` with an origin, a private cache in a temporary directory and a client.
    func withClient(
        configure: (inout HTTPCache.Configuration) -> Void = { _ in },
        script: @escaping TestOriginServer.Script,
        _ body: (CachingHTTPClient, TestOriginServer) async throws -> Void
    ) async throws {
        try await withCachingClient(configure: configure, script: script, body)
    }

    func get(_ origin: TestOriginServer, _ path: String = "/r", _ fields: [(String, String)] = []) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: path)
        for (name, value) in fields {
            request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        return request
    }

    func text(_ served: CachedResponse) async throws -> String {
        String(decoding: try await served.body.collect(upTo: 1 << 26), as: UTF8.self)
    }

    @Test("max-age: the second request is a hit and the origin sees one request")
    func maxAge() async throws {
        try await withClient(script: { r in .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)") }) {
            client,
            origin in
            let first = try await client.execute(get(origin))
            #expect(first.outcome == .miss)
            #expect(try await text(first) == "v1")
            let second = try await client.execute(get(origin))
            #expect(second.outcome == .hit)
            #expect(try await text(second) == "v1")
            #expect(second.response.headerFields[.age] != nil)
            #expect(origin.requestCount == 1)
        }
    }

    @Test("ETag round trip: the client sends If-None-Match, the origin's 304 becomes a 200 from cache")
    func etag() async throws {
        try await withClient(script: { r in
            if r.head.headerFields[.ifNoneMatch] == "\"v1\"" { return .init(status: 304, fields: [("ETag", "\"v1\"")]) }
            return .init(fields: [("ETag", "\"v1\""), ("Cache-Control", "no-cache")], body: "payload")
        }) { client, origin in
            _ = try await text(try await client.execute(get(origin)))
            let second = try await client.execute(get(origin))
            #expect(second.outcome == .revalidated)
            #expect(second.response.status == .ok)
            #expect(try await text(second) == "payload")
            #expect(origin.requests.last?.headerFields[.ifNoneMatch] == "\"v1\"")
        }
    }

    @Test("Last-Modified round trip: If-Modified-Since reaches the origin and its 304 is served from cache")
    func lastModified() async throws {
        let modified = "Sun, 06 Nov 1994 08:49:37 GMT"
        try await withClient(script: { r in
            if r.head.headerFields[.ifModifiedSince] == modified { return .init(status: 304) }
            return .init(fields: [("Last-Modified", modified), ("Cache-Control", "max-age=0")], body: "doc")
        }) { client, origin in
            _ = try await text(try await client.execute(get(origin)))
            let second = try await client.execute(get(origin))
            #expect(second.outcome == .revalidated)
            #expect(try await text(second) == "doc")
            #expect(origin.requests.last?.headerFields[.ifModifiedSince] == modified)
        }
    }

    @Test("A caller's own conditional request may get a 304; the cache's never reach the caller")
    func callerConditional() async throws {
        try await withClient(script: { _ in
            .init(fields: [("ETag", "\"x\""), ("Cache-Control", "max-age=60")], body: "b")
        }) { client, origin in
            _ = try await text(try await client.execute(get(origin)))
            let conditional = try await client.execute(get(origin, "/r", [("If-None-Match", "\"x\"")]))
            #expect(conditional.response.status == .notModified)
            #expect(origin.requestCount == 1)
        }
    }

    @Test("Offline policy: a stored response is served with the origin gone; a miss throws notCached")
    func offline() async throws {
        try await withClient(script: { _ in .init(fields: [("Cache-Control", "max-age=1")], body: "kept") }) {
            client,
            origin in
            _ = try await text(try await client.execute(get(origin)))
            await origin.stop()
            let served = try await client.execute(get(origin), policy: .returnCacheDataDontLoad)
            #expect(try await text(served) == "kept")
            await #expect {
                _ = try await client.execute(get(origin, "/missing"), policy: .returnCacheDataDontLoad)
            } throws: { ($0 as? StowageError)?.code == .notCached }
        }
    }

    @Test("Each URLCache policy against the real origin")
    func policies() async throws {
        try await withClient(script: { r in
            if r.head.headerFields[.ifNoneMatch] != nil { return .init(status: 304, fields: [("ETag", "\"e\"")]) }
            return .init(fields: [("Cache-Control", "max-age=60"), ("ETag", "\"e\"")], body: "v\(r.index)")
        }) { client, origin in
            // Bodies are read: a response is stored as its body streams through.
            func outcome(_ policy: RequestCachePolicy) async throws -> CacheOutcome {
                let served = try await client.execute(get(origin), policy: policy)
                _ = try await text(served)
                return served.outcome
            }
            #expect(try await outcome(.returnCacheDataElseLoad) == .miss)
            #expect(try await outcome(.useProtocolCachePolicy) == .hit)
            #expect(try await outcome(.returnCacheDataElseLoad) == .hit)
            #expect(try await outcome(.reloadRevalidatingCacheData) == .revalidated)
            let reloaded = try await client.execute(get(origin), policy: .reloadIgnoringLocalCacheData)
            #expect(reloaded.outcome == .miss)
            #expect(try await text(reloaded) == "v3")
            #expect(try await text(try await client.execute(get(origin), policy: .returnCacheDataDontLoad)) == "v3")
            #expect(origin.requestCount == 3)
        }
    }

    @Test("stale-if-error: with the origin down, a stale response within the window is served")
    func staleIfErrorOriginDown() async throws {
        let clock = ManualClock(startingAt: Date())
        try await withClient(
            configure: { $0.clock = clock.cacheClock },
            script: { _ in
                .init(fields: [("Cache-Control", "max-age=1, stale-if-error=3600")], body: "fallback")
            }
        ) { client, origin in
            _ = try await text(try await client.execute(get(origin)))
            await origin.stop()
            clock.advance(by: .seconds(2))
            let served = try await client.execute(get(origin))
            #expect(served.outcome == .stale)
            #expect(try await text(served) == "fallback")
        }
    }

    @Test("A POST goes to the origin with its body and invalidates the stored GET")
    func postInvalidates() async throws {
        try await withClient(script: { r in
            if r.head.method == .post { return .init(status: 204, body: "") }
            return .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }) { client, origin in
            _ = try await text(try await client.execute(get(origin)))
            var post = get(origin)
            post.method = .post
            let posted = try await client.execute(post, body: HTTPBody(bytes: Array("data".utf8)))
            #expect(posted.outcome == .bypass)
            _ = try await posted.body.collect(upTo: 100)
            let after = try await client.execute(get(origin))
            #expect(after.outcome == .miss)
            #expect(try await text(after) == "v3")
        }
    }

    @Test("A 4 MB body streams from the origin, is stored on disk and served back whole")
    func largeBody() async throws {
        let payload = patternedBytes(4_000_000)
        try await withClient(
            configure: { $0.diskCapacity = .init(200_000_000) },
            script: { _ in .init(fields: [("Cache-Control", "max-age=60")], bytes: payload) }
        ) { client, origin in
            let first = try await client.execute(get(origin))
            #expect(try await first.body.collect(upTo: 1 << 26) == payload)
            let second = try await client.execute(get(origin))
            #expect(second.outcome == .hit)
            #expect(try await second.body.collect(upTo: 1 << 26) == payload)
            #expect(origin.requestCount == 1)
        }
    }
}
