import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Testing

extension RawHTTPExchange {
    /// The values of every `Date` field line in the response head.
    var dates: [String] { fields.filter { $0.name == "date" }.map(\.value) }

    /// The `Age` field's value in seconds, `nil` without one.
    var ageSeconds: Int? { value(of: "Age").flatMap { Int($0) } }
}

// Hummingbird's Application sets `date` on every response it writes, replacing any the
// response has; RFC 9110 §6.6.1 allows one `Date`, and a hit must not carry two.
@Suite("Hummingbird response-cache middleware: one Date field on a live server")
struct ResponseCacheDateFieldTests {
    /// The `Date` the dated route answers with: thirty seconds before the suite's start.
    static let originDate = HTTPDate.format(Int64(Date().timeIntervalSince1970) - 30)

    static func routes(_ router: Router<BasicRequestContext>) {
        router.get("/dated") { _, _ in
            Response(
                status: .ok,
                headers: [.cacheControl: "public, max-age=3600", .date: ResponseCacheDateFieldTests.originDate],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "dated"))
            )
        }
        router.get("/undated") { _, _ in
            Response(
                status: .ok,
                headers: [.cacheControl: "public, max-age=3600"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "undated"))
            )
        }
    }

    @Test("A miss and a hit of a response with its own Date each carry one Date, and the hit's Age counts from it")
    func datedResponseHasOneDate() async throws {
        try await withLiveCachedApp(clock: .system, routes: Self.routes) { client, _ in
            let port = client.port
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
        try await withLiveCachedApp(clock: .system, routes: Self.routes) { client, _ in
            let port = client.port
            let request = ["GET /undated HTTP/1.1", "Host: dates.example"]
            let first = try await RawHTTPExchange.send(request, toPort: port)
            let hit = try await RawHTTPExchange.send(request, toPort: port)
            #expect(first.dates.count == 1, "the first response's Date lines: \(first.dates)")
            #expect(hit.isHit, "Cache-Status: \(hit.value(of: "Cache-Status") ?? "none")")
            #expect(hit.dates.count == 1, "the hit's Date lines: \(hit.dates)")
        }
    }
}
