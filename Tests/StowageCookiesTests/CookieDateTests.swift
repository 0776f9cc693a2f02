import Foundation
import Testing

@testable import StowageCookies

/// RFC 6265 §5.1.1's cookie-date parser, on the formats servers send and the ones it must refuse.
@Suite struct CookieDateTests {
    @Test(
        "§5.1.1 dates servers send",
        arguments: [
            ("Wed, 21 Oct 2015 07:28:00 GMT", 1_445_412_480.0),  // RFC 1123
            ("Wednesday, 21-Oct-15 07:28:00 GMT", 1_445_412_480.0),  // RFC 850, two-digit year
            ("Wed Oct 21 07:28:00 2015", 1_445_412_480.0),  // asctime
            ("21 oct 1999 7:8:9", 940_489_689.0),  // one-digit time fields, lower-case month
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
        ]
    )
    func parses(string: String, seconds: Double) {
        #expect(CookieDate.parse(Substring(string)) == Date(timeIntervalSince1970: seconds))
    }

    @Test(
        "§5.1.1 dates that are ignored",
        arguments: [
            "", "NaN", "-1", "Wed, 32 Oct 2015 07:28:00 GMT", "Wed, 21 Foo 2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 24:00:00 GMT", "Wed, 21 Oct 1600 07:28:00 GMT", "31 Feb 2030 00:00:00",
            "Wed, 21 Oct 2015", "Wed, 21 Oct 20155 07:28:00 GMT", "infinity",
        ]
    )
    func refuses(string: String) {
        #expect(CookieDate.parse(Substring(string)) == nil)
    }
}
