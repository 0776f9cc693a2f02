import Foundation
import StowageHTTPCache
import StowageTesting
import StowageVapor
import Testing
import Vapor
import VaporTesting

/// Runs `test` with the port of a live Vapor server on 127.0.0.1 (port 0: the kernel picks)
/// whose middleware caches through a shared cache in a temporary directory, keyed on each
/// request's own `Host`, with the routes `routes` adds.
func withLiveCachedApp(routes: (Application) -> Void, _ test: (Int) async throws -> Void) async throws {
    let directory = try TemporaryDirectory("StowageVaporDateTests")
    let cache = try HTTPCache(
        directory: directory.url,
        configuration: HTTPCache.Configuration(kind: .shared, name: "stowage")
    )
    try await withApp { app in
        app.middleware.use(try ResponseCacheMiddleware(cache: cache))
        routes(app)
        try await app.server.start(address: .hostname("127.0.0.1", port: 0))
        do {
            let port = try #require(app.http.server.shared.localAddress?.port)
            try await test(port)
        } catch {
            await app.server.shutdown()
            throw error
        }
        await app.server.shutdown()
    }
    try await cache.close()
    withExtendedLifetime(directory) {}
}

extension RawHTTPExchange {
    /// The values of every `Date` field line in the response head.
    var dates: [String] { fields.filter { $0.name == "date" }.map(\.value) }

    /// The `Age` field's value in seconds, `nil` without one.
    var ageSeconds: Int? { value(of: "Age").flatMap { Int($0) } }
}

// Vapor's HTTPServerResponseEncoder adds a `date` to every response it writes; RFC 9110 §6.6.1
// allows one `Date`, so a response the cache answers must not bring its own as well.
@Suite("Vapor response-cache middleware: one Date field on a live server")
struct DateFieldTests {
    /// The `Date` the dated route answers with: thirty seconds before the suite's start.
    static let originDate = Date(timeIntervalSinceNow: -30)

    static func routes(_ app: Application) {
        app.get("dated") { _ in
            response(
                "dated",
                headers: ["Cache-Control": "public, max-age=3600", "Date": DateFieldTests.originDate.rfc1123]
            )
        }
        app.get("undated") { _ in response("undated", headers: ["Cache-Control": "public, max-age=3600"]) }
        app.post("undated") { _ in response("posted", headers: [:]) }
    }

    @Test("A miss and a hit of a response with its own Date each carry one Date, and the hit's Age counts from it")
    func datedResponseHasOneDate() async throws {
        try await withLiveCachedApp(routes: Self.routes) { port in
            let request = ["GET /dated HTTP/1.1", "Host: dates.example"]
            let first = try await RawHTTPExchange.send(request, toPort: port)
            let hit = try await RawHTTPExchange.send(request, toPort: port)
            #expect(first.body == "dated")
            #expect(first.dates.count == 1, "the first response's Date lines: \(first.dates)")
            #expect(hit.isHit, "Cache-Status: \(hit.value(of: "Cache-Status") ?? "none")")
            #expect(hit.body == "dated")
            #expect(hit.dates.count == 1, "the hit's Date lines: \(hit.dates)")
            // RFC 9111 §4.2.3: the stored response's age is counted from the origin's Date.
            #expect((hit.ageSeconds ?? 0) >= 30, "the hit's Age: \(hit.value(of: "Age") ?? "none")")
        }
    }

    @Test("A hit of a response that came without a Date carries one Date")
    func undatedResponseHasOneDate() async throws {
        try await withLiveCachedApp(routes: Self.routes) { port in
            let request = ["GET /undated HTTP/1.1", "Host: dates.example"]
            let first = try await RawHTTPExchange.send(request, toPort: port)
            let hit = try await RawHTTPExchange.send(request, toPort: port)
            #expect(first.dates.count == 1, "the first response's Date lines: \(first.dates)")
            #expect(hit.isHit, "Cache-Status: \(hit.value(of: "Cache-Status") ?? "none")")
            #expect(hit.dates.count == 1, "the hit's Date lines: \(hit.dates)")
        }
    }

    @Test("A request the cache leaves to the route gets Vapor's one Date")
    func passedThroughResponseHasOneDate() async throws {
        try await withLiveCachedApp(routes: Self.routes) { port in
            let posted = try await RawHTTPExchange.send(
                ["POST /undated HTTP/1.1", "Host: dates.example", "Content-Length: 0"],
                toPort: port
            )
            #expect(posted.body == "posted")
            #expect(posted.dates.count == 1, "the response's Date lines: \(posted.dates)")
        }
    }
}
