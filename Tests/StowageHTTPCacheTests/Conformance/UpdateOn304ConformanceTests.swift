import Foundation
import HTTPTypes
import StowageHTTPCache
import StowageTestSupport
import Testing

/// §4.3.4 and §3.2: a 304 updates the header fields of what it freshens — in the response it
/// answers with and in the stored response later hits return — for every field the public
/// HTTP cache test suite checks (its "Update Headers Upon a 304" group), validated by entity tag
/// and by `Last-Modified`, on a shared cache with the clock moved by hand, so no run depends on
/// timing.
@Suite struct UpdateOn304ConformanceTests {
    /// A field, the value the first response carries and the value the 304 brings.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var first: String
        var second: String
        var testDescription: String { name }
    }

    enum Validator: String, CaseIterable, Sendable { case eTag = "ETag", lastModified = "Last-Modified" }

    static let cases: [Case] =
        ["Test-Header", "X-Test-Header", "Content-Foo", "X-Content-Foo", "Public-Key-Pins"].map {
            Case(name: $0, first: "\($0)-value-A", second: "\($0)-value-B")
        } + [
            Case(name: "Content-Type", first: "text/plain", second: "text/plain;charset=utf-8"),
            Case(name: "Content-MD5", first: "rL0Y20zC+Fzt72VPzMSk2A==", second: "N7UdGUp1E+RbVvZSTy1R8g=="),
            Case(name: "Content-Location", first: "/foo", second: "/bar"),
            Case(
                name: "Content-Security-Policy",
                first: "default-src 'self'",
                second: "default-src 'self' cdn.example.com"
            ),
            Case(name: "X-Frame-Options", first: "deny", second: "sameorigin"),
            Case(name: "X-XSS-Protection", first: "1", second: "1; mode=block"),
            Case(name: "Cache-Control", first: "max-age=1", second: "max-age=3600"),
            Case(name: "Clear-Site-Data", first: "cache", second: "cookies"),
            Case(name: "Set-Cookie", first: "a=b", second: "a=c"),
            Case(name: "Set-Cookie2", first: "a=b", second: "a=c"),
        ]

    /// The suite's response: `max-age` by lifetime (or a filler when the field under test is
    /// Cache-Control itself), `Date`, the validator (the same in both responses), and the field.
    static func fields(
        _ testCase: Case,
        value: String,
        validator: Validator,
        lifetime: Int,
        date: Double
    ) -> [(String, String)] {
        let cacheControl = testCase.name == "Cache-Control" ? ("A", "b") : ("Cache-Control", "max-age=\(lifetime)")
        let dayBefore = HTTPDate.format(Int64(t0.timeIntervalSince1970) - 86_400)
        let validatorValue = validator == .eTag ? "\"\(testCase.name)-etag-1\"" : dayBefore
        return [
            cacheControl, ("Date", HTTPDate.format(Int64(date))), (validator.rawValue, validatorValue),
            (testCase.name, value),
        ]
    }

    @Test("§4.3.4 a 304 updates the returned and the stored field", arguments: cases, Validator.allCases)
    func updates(_ testCase: Case, validator: Validator) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            // The suite checks RFC 9111's behaviour, which replays cookies; Stowage's shared
            // default keeps them out (SetCookieHandling), tested in SetCookieTests.
            let cache = try makeCache(root, clock: clock, kind: .shared) { $0.rules.setCookie = .store }
            let origin = TestOrigin { request, _ in
                let isConditional = Self.isConditional(request)
                let fields = Self.fields(
                    testCase,
                    value: isConditional ? testCase.second : testCase.first,
                    validator: validator,
                    lifetime: isConditional ? 3600 : 1,
                    date: clock.secondsSince1970
                )
                return isConditional
                    ? (response(304, fields, date: nil), []) : (response(200, fields, date: nil), Array("body".utf8))
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(3))  // the suite's pause: the first response (max-age=1) is stale
            let validated = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(validated.outcome == .revalidated, "\(validated.trace)")
            #expect(origin.requests.last.map(Self.isConditional) == true)
            let name = HTTPField.Name(testCase.name)!
            #expect(validated.response.headerFields[values: name] == [testCase.second], "returned after the 304")
            #expect(try await text(validated) == "body")

            clock.advance(by: .seconds(1))
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit, "\(hit.trace)")
            #expect(hit.response.headerFields[values: name] == [testCase.second], "stored after the 304")
            #expect(origin.count == 2)
        }
    }

    /// The suite's `304-etag-update-response-ETag`: the 304 to `If-None-Match: "abcdef"` carries
    /// `ETag: "ghijkl"`.
    @Test(
        "§4.3.4 a 304 whose strong ETag matches nothing stored updates nothing; §4.3.3 the response the request nominated answers it, without a second request"
    )
    func mismatchedStrongValidator() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let origin = TestOrigin { request, _ in
                let fields = [
                    ("Cache-Control", "max-age=2"), ("ETag", Self.isConditional(request) ? "\"ghijkl\"" : "\"abcdef\""),
                    ("Date", HTTPDate.format(Int64(clock.secondsSince1970))),
                ]
                return Self.isConditional(request)
                    ? (response(304, fields, date: nil), []) : (response(200, fields, date: nil), Array("body".utf8))
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(3))
            let validated = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(origin.count == 2, "one origin request for one client request: \(origin.requests)")
            #expect(origin.requests.last?.headerFields[.ifNoneMatch] == "\"abcdef\"")
            #expect(validated.response.status == .ok)
            #expect(validated.response.headerFields[.eTag] == "\"abcdef\"", "served as stored, not updated")
            #expect(try await text(validated) == "body")
            #expect(validated.status.forwardStatus == 304)

            // Still stale, so the next request validates again, with the stored ETag.
            clock.advance(by: .seconds(1))
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            #expect(origin.count == 3)
            #expect(origin.requests.last?.headerFields[.ifNoneMatch] == "\"abcdef\"", "the stored ETag was kept")
        }
    }

    static func isConditional(_ request: HTTPRequest) -> Bool {
        request.headerFields[.ifNoneMatch] != nil || request.headerFields[.ifModifiedSince] != nil
    }
}
