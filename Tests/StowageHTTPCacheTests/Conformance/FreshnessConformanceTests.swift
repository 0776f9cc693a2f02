import Foundation
import HTTPTypes
import StowageHTTPCache
import Testing

/// RFC 9111 §4.2: freshness and age.
@Suite struct FreshnessConformanceTests {
    @Test("§4.2.1 s-maxage wins in a shared cache, a private cache ignores it")
    func sharedMaxAge() {
        let res = stored(response(200, [("Cache-Control", "max-age=60, s-maxage=600")]))
        #expect(sharedRules.freshnessLifetime(of: res) == .seconds(600))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(60))
    }

    @Test("RFC 9110 §6.6.1 a response stored without Date gets the time it was received, not a later one")
    func missingDateIsReceiptTime() {
        let res = stored(response(200, [("Cache-Control", "max-age=60")], date: nil), responseTime: t0 + 5)
        #expect(res.response.headerFields[.date] == httpDate(t0 + 5))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(60))
        // A Date the origin sent is kept as it was.
        let dated = stored(response(200, [("Cache-Control", "max-age=60")], date: t0 - 3), responseTime: t0 + 5)
        #expect(dated.response.headerFields[.date] == httpDate(t0 - 3))
    }

    @Test("§4.2.1 max-age gives the lifetime")
    func maxAge() {
        #expect(
            privateRules.freshnessLifetime(of: stored(response(200, [("Cache-Control", "max-age=120")])))
                == .seconds(120)
        )
    }

    @Test("§5.3 with max-age present, Expires is ignored")
    func maxAgeBeatsExpires() {
        let res = stored(response(200, [("Cache-Control", "max-age=10"), ("Expires", httpDate(t0 + 1000))]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(10))
    }

    @Test("§4.2.1 Expires minus Date gives the lifetime")
    func expiresMinusDate() {
        let res = stored(response(200, [("Expires", httpDate(t0 + 300))]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(300))
    }

    @Test("§5.3 an invalid Expires, such as 0, means already expired")
    func invalidExpires() {
        let res = stored(response(200, [("Expires", "0"), ("Last-Modified", httpDate(t0 - 100_000))]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(0))
    }

    @Test("§5.3 an Expires that is not exactly an HTTP-date (UTC, two spaces, dashes, no comma, lowercase) is expired")
    func nearMissExpires() throws {
        let valid = httpDate(t0 + 300)  // e.g. "Thu, 18 Aug 2050 02:01:18 GMT"
        let parts = valid.split(separator: " ").map(String.init)
        try #require(parts.count == 6)
        let (day, month, year, time) = (parts[1], parts[2], parts[3], parts[4])
        let dayName = String(parts[0].dropLast())
        let fullDayName = [
            "Sun": "Sunday", "Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
            "Fri": "Friday", "Sat": "Saturday",
        ][dayName]!
        let asctimeDay = day.hasPrefix("0") ? " " + day.dropFirst() : day
        // The three forms RFC 9110 §5.6.7 defines give the lifetime.
        for form in [
            valid, "\(fullDayName), \(day)-\(month)-\(year.suffix(2)) \(time) GMT",
            "\(dayName) \(month) \(asctimeDay) \(time) \(year)",
        ] {
            #expect(
                privateRules.freshnessLifetime(of: stored(response(200, [("Expires", form)]))) == .seconds(300),
                "\(form)"
            )
        }
        // Near misses are invalid, so already expired — never a date the cache trusts.
        for nearMiss in [
            valid.replacingOccurrences(of: "GMT", with: "UTC"),
            valid.replacingOccurrences(of: ", ", with: ",  "),
            "\(dayName), \(day)-\(month)-\(year) \(time) GMT",
            valid.replacingOccurrences(of: ",", with: ""),
            valid.replacingOccurrences(of: month, with: month.lowercased()),
            valid.replacingOccurrences(of: " \(time.prefix(2)):", with: " \(Int(time.prefix(2))! % 10):"),
        ] {
            #expect(
                privateRules.freshnessLifetime(of: stored(response(200, [("Expires", nearMiss)]))) == .seconds(0),
                "\(nearMiss)"
            )
        }
    }

    @Test("§4.2.1 an invalid max-age makes the response stale (and Expires is still ignored)")
    func invalidMaxAge() {
        let res = stored(response(200, [("Cache-Control", "max-age=ten"), ("Expires", httpDate(t0 + 300))]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(0))
    }

    @Test("§4.2.1 conflicting duplicate max-age values make the response stale; equal ones count once")
    func duplicateMaxAge() {
        #expect(
            privateRules.freshnessLifetime(of: stored(response(200, [("Cache-Control", "max-age=60, max-age=70")])))
                == .seconds(0)
        )
        #expect(
            privateRules.freshnessLifetime(
                of: stored(response(200, [("Cache-Control", "max-age=60"), ("Cache-Control", "max-age=60")]))
            )
                == .seconds(60)
        )
    }

    @Test("§1.2.2 a delta-seconds value too large to represent counts as 2^31")
    func hugeDeltaSeconds() {
        let res = stored(response(200, [("Cache-Control", "max-age=99999999999999999999999999")]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(2_147_483_648))
    }

    @Test("§4.2.2 heuristic freshness: 10% of the time since Last-Modified")
    func heuristic() {
        let res = stored(response(200, [("Last-Modified", httpDate(t0 - 10_000))]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(1_000))
        #expect(privateRules.usesHeuristicFreshness(res))
    }

    @Test("§4.2.2 the heuristic lifetime is capped")
    func heuristicCap() {
        let res = stored(response(200, [("Last-Modified", httpDate(t0 - 100 * 86_400))]))
        #expect(privateRules.freshnessLifetime(of: res) == .seconds(86_400))
    }

    @Test("§4.2.2 the operator's cap and lifetimes, set after the rules are made, take effect")
    func operatorDurationsSetLater() {
        var rules = CacheRules(kind: .shared)
        rules.maximumHeuristicLifetime = .seconds(120)
        let res = stored(response(200, [("Last-Modified", httpDate(t0 - 100 * 86_400))]))
        #expect(rules.freshnessLifetime(of: res) == .seconds(120))
        rules.defaultLifetimes = [404: .milliseconds(1_500)]
        #expect(rules.freshnessLifetime(of: stored(response(404, []))) == .milliseconds(1_500))
        rules.defaultLifetimes = [:]
        #expect(rules.freshnessLifetime(of: stored(response(404, []))) == .seconds(0))
    }

    @Test("§4.2.2 no heuristic for a status that is not heuristically cacheable, unless public")
    func heuristicStatus() {
        let lastModified = ("Last-Modified", httpDate(t0 - 10_000))
        #expect(privateRules.freshnessLifetime(of: stored(response(302, [lastModified]))) == .seconds(0))
        #expect(
            privateRules.freshnessLifetime(of: stored(response(302, [lastModified, ("Cache-Control", "public")])))
                == .seconds(1_000)
        )
    }

    @Test("§4.2.3 apparent age: response_time minus Date")
    func apparentAge() {
        let res = stored(
            response(200, [("Cache-Control", "max-age=60")], date: t0 - 30),
            requestTime: t0,
            responseTime: t0
        )
        #expect(privateRules.currentAge(of: res, now: t0) == .seconds(30))
    }

    @Test("§4.2.3 corrected age: the Age field plus the response delay")
    func correctedAge() {
        let res = stored(
            response(200, [("Cache-Control", "max-age=60"), ("Age", "20")]),
            requestTime: t0 - 3,
            responseTime: t0
        )
        #expect(privateRules.currentAge(of: res, now: t0) == .seconds(23))
    }

    @Test("§4.2.3 resident time: the current age grows while the response is stored")
    func residentTime() {
        let res = stored(response(200, [("Cache-Control", "max-age=60")]))
        #expect(privateRules.currentAge(of: res, now: t0 + 45) == .seconds(45))
        #expect(privateRules.timeToLive(of: res, now: t0 + 45) == .seconds(15))
    }

    @Test("§5.1 an invalid Age is ignored; a list uses its first member")
    func ageField() {
        #expect(privateRules.currentAge(of: stored(response(200, [("Age", "abc")])), now: t0) == .seconds(0))
        #expect(privateRules.currentAge(of: stored(response(200, [("Age", "5, 7")])), now: t0) == .seconds(5))
    }

    @Test("§4.2 a response is fresh while its age is below its lifetime")
    func freshWhileYoung() {
        let res = stored(response(200, [("Cache-Control", "max-age=60")]))
        #expect(privateRules.decide(request(), stored: res, now: t0 + 59) == .serve(.hit))
        #expect(privateRules.decide(request(), stored: res, now: t0 + 60) == .validate)
    }

    @Test("§4.2.1 a shared cache treats an invalid s-maxage as stale")
    func invalidSharedMaxAge() {
        #expect(
            sharedRules.freshnessLifetime(of: stored(response(200, [("Cache-Control", "s-maxage=x, max-age=60")])))
                == .seconds(0)
        )
    }
}
