import Foundation
import HTTPTypes
import StowageHTTPCache
import StowageTestSupport
import Testing

/// RFC 9111 §5.2 grammar: `#cache-directive`, token or quoted-string arguments.
@Suite struct CacheControlTests {
    @Test("§5.2 directive names are case-insensitive; arguments keep their case")
    func caseInsensitiveNames() {
        let cc = CacheControl(parsing: "Max-Age=60, PRIVATE=\"X-Foo\"")
        #expect(cc.maxAge == .seconds(60))
        #expect(cc.privateFields == ["x-foo"])
        #expect(cc.directives.map(\.name) == ["max-age", "private"])
    }

    @Test("§5.2 quoted-string arguments: escapes removed, commas inside quotes kept")
    func quotedStrings() {
        let cc = CacheControl(parsing: #"no-cache="Set-Cookie, X-A", ext="a\"b", max-age="30""#)
        #expect(cc.noCacheFields == ["set-cookie", "x-a"])
        #expect(cc.directives[1].argument == "a\"b")
        #expect(cc.maxAge == .seconds(30))
    }

    @Test("RFC 9110 §5.6.1 empty list elements and whitespace are allowed")
    func emptyElements() {
        let cc = CacheControl(parsing: " ,, no-store ,\t, max-age = 5 ,")
        #expect(cc.noStore)
        #expect(cc.maxAge == .seconds(5))
    }

    @Test("§5.2.3 unknown directives are kept and ignored")
    func unknownDirectives() {
        let cc = CacheControl(parsing: "community=\"UCI\", max-age=10")
        #expect(cc.contains("community"))
        #expect(cc.maxAge == .seconds(10))
    }

    @Test("Several Cache-Control lines form one list")
    func severalLines() {
        let cc = CacheControl(parsing: ["max-age=10", "must-revalidate"])
        #expect(cc.maxAge == .seconds(10) && cc.mustRevalidate)
    }

    @Test(
        "Malformed elements are skipped up to the next comma; the rest still counts",
        arguments: [
            ("max-age=10 junk, no-store", true),
            ("=5, no-store", true),
            ("ext=\"unterminated, no-store", false),
            ("a b c, no-store", true),
            ("@@@, no-store", true),
        ]
    )
    func malformed(value: String, noStore: Bool) {
        #expect(CacheControl(parsing: value).noStore == noStore)
    }

    @Test("§1.2.2 delta-seconds: invalid, conflicting and clamped values")
    func deltaSeconds() {
        #expect(CacheControl(parsing: "max-age").maxAge == .invalid)
        #expect(CacheControl(parsing: "max-age=-1").maxAge == .invalid)
        #expect(CacheControl(parsing: "max-age=1.5").maxAge == .invalid)
        #expect(CacheControl(parsing: "max-age=1, max-age=2").maxAge == .conflicting)
        #expect(CacheControl(parsing: "max-age=4294967296").maxAge == .seconds(2_147_483_648))
    }

    @Test("max-stale with and without an argument")
    func maxStale() {
        #expect(CacheControl(parsing: "max-stale").maxStale == .any)
        #expect(CacheControl(parsing: "max-stale=5").maxStale == .seconds(5))
        #expect(CacheControl(parsing: "max-stale=x").maxStale == .seconds(0))
        #expect(CacheControl(parsing: "no-cache").maxStale == nil)
    }

    @Test("Serializing quotes what a token cannot hold, and parses back")
    func roundTrip() {
        let cc = CacheControl([
            .init("max-age", "5"), .init("no-cache", "A, B"), .init("ext", "q\"uote"), .init("public"),
        ])
        #expect(cc.description == #"max-age=5, no-cache="A, B", ext="q\"uote", public"#)
        #expect(CacheControl(parsing: cc.description) == cc)
    }
}

@Suite struct HTTPDateTests {
    @Test(
        "RFC 9110 §5.6.7 the three date forms parse to the same instant",
        arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"]
    )
    func threeForms(text: String) {
        #expect(HTTPDate.parse(text, now: Self.january1(2026)) == 784_111_777)
    }

    @Test(
        "RFC 9110 §5.6.7 an RFC 850 two-digit year more than 50 years after the time received is the century before",
        arguments: [(2026, 1994), (2043, 1994), (2044, 2094), (2060, 2094), (2150, 2194)]
    )
    func rfc850Century(receivedIn: Int, year: Int) {
        let parsed = HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: Self.january1(receivedIn))
        #expect(parsed == HTTPDate.parse("Sun, 06 Nov \(year) 08:49:37 GMT"))
        let strict = HTTPDate.parseStrict("Sunday, 06-Nov-94 08:49:37 GMT", now: Self.january1(receivedIn))
        #expect(strict == parsed)
    }

    @Test("a stored response reads an RFC 850 date against the cache clock's time it was received")
    func storedRFC850FollowsTheClock() {
        let clock = ManualClock(startingAt: Self.january1(2030))
        let fields: HTTPFields = [.lastModified: "Sunday, 06-Nov-94 08:49:37 GMT"]
        let received2030 = StoredResponse(
            response: HTTPResponse(status: .ok, headerFields: fields),
            requestTime: clock.now,
            responseTime: clock.now
        )
        #expect(received2030.lastModified == 784_111_777, "1994: 2094 is more than 50 years after 2030")
        clock.advance(by: .seconds(30 * 366 * 86_400))  // into 2060
        let received2060 = StoredResponse(
            response: HTTPResponse(status: .ok, headerFields: fields),
            requestTime: clock.now,
            responseTime: clock.now
        )
        #expect(received2060.lastModified == HTTPDate.parse("Sat, 06 Nov 2094 08:49:37 GMT"))
        #expect(received2030.lastModified == 784_111_777, "a stored response keeps its reading")
    }

    /// New Year's Day of `year`, 00:00 UTC.
    static func january1(_ year: Int) -> Date {
        Date(timeIntervalSince1970: Double(HTTPDate.parse("Mon, 01 Jan \(year) 00:00:00 GMT") ?? 0))
    }

    @Test("IMF-fixdate formatting round-trips")
    func format() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for seconds: Int64 in [0, 951_782_400, 1_700_000_000, 4_102_444_800, 253_402_300_799] {
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds)
        }
    }

    @Test(
        "Invalid dates give nil",
        arguments: [
            "0", "", "-1", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 06 Nov 1994 08:49 GMT", "tomorrow",
        ]
    )
    func invalid(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
