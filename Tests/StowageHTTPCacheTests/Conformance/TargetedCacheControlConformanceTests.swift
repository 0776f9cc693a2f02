import HTTPTypes
import Testing

@testable import StowageHTTPCache

/// RFC 9213: targeted cache control (`CDN-Cache-Control` and fields of the operator's own).
@Suite struct TargetedCacheControlConformanceTests {
    private let cdn = CacheRules(kind: .shared, targetedFields: [CacheRules.cdnCacheControl])
    private let ownFirst = CacheRules(
        kind: .shared,
        targetedFields: [HTTPField.Name("Stowage-Cache-Control")!, CacheRules.cdnCacheControl]
    )

    private func isStorable(_ rules: CacheRules, _ pairs: [(String, String)]) -> Bool {
        rules.storability(of: response(200, pairs), for: request()) == .storable
    }

    @Test("RFC 9213 §2.2 a valid targeted field makes a Cache-Control: no-store response storable for the CDN")
    func targetedOverridesNoStore() {
        let pairs = [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=600")]
        #expect(isStorable(cdn, pairs))
        #expect(!isStorable(sharedRules, pairs), "a shared cache not targeted follows Cache-Control")
        #expect(!isStorable(privateRules, pairs), "§2.2: the private cache ignores targeted fields")
        let lifetime = cdn.freshnessLifetime(of: stored(response(200, pairs), rules: cdn))
        #expect(lifetime == 600)
    }

    @Test("RFC 9213 §2.2 private, no-store and no-cache inside the targeted field apply; Cache-Control does not")
    func targetedDirectivesApply() {
        #expect(!isStorable(cdn, [("Cache-Control", "public, max-age=600"), ("CDN-Cache-Control", "private")]))
        #expect(!isStorable(cdn, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store")]))
        let noCache = stored(
            response(200, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-cache, max-age=600")]),
            rules: cdn
        )
        #expect(cdn.decide(request(), stored: noCache, now: t0 + 1) == .validate)
        // The targeted max-age wins over Cache-Control's, both ways.
        let shorter = stored(
            response(200, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "max-age=10")]),
            rules: cdn
        )
        #expect(cdn.decide(request(), stored: shorter, now: t0 + 20) == .validate)
        let longer = stored(
            response(200, [("Cache-Control", "max-age=10"), ("CDN-Cache-Control", "max-age=600")]),
            rules: cdn
        )
        #expect(cdn.decide(request(), stored: longer, now: t0 + 20) == .serve(.hit))
    }

    @Test("RFC 9213 §2.2 Expires is ignored when a targeted field is followed")
    func expiresIgnored() {
        let pairs = [("Expires", httpDate(t0 + 3_600)), ("CDN-Cache-Control", "must-revalidate")]
        let entry = stored(response(200, pairs), rules: cdn)
        #expect(cdn.freshnessLifetime(of: entry) == 0)
        #expect(sharedRules.freshnessLifetime(of: stored(response(200, pairs))) == 3_600)
    }

    @Test("RFC 9213 §2.1 an invalid targeted field is ignored: Cache-Control applies")
    func invalidTargetedIgnored() {
        for invalid in ["Max-Age=600", "max-age=600s", "max-age=600,", "max-age=\"unterminated", "", "  "] {
            let pairs = [("Cache-Control", "no-store"), ("CDN-Cache-Control", invalid)]
            #expect(!isStorable(cdn, pairs), "\(invalid.debugDescription)")
        }
    }

    @Test("RFC 9213 §2.2 the first targeted field in the cache's list that is present and valid wins")
    func firstValidWins() {
        let both = [
            ("Stowage-Cache-Control", "max-age=30"), ("CDN-Cache-Control", "max-age=600"),
            ("Cache-Control", "no-store"),
        ]
        #expect(ownFirst.freshnessLifetime(of: stored(response(200, both), rules: ownFirst)) == 30)
        let ownInvalid = [("Stowage-Cache-Control", "MAX-AGE"), ("CDN-Cache-Control", "max-age=600")]
        #expect(ownFirst.freshnessLifetime(of: stored(response(200, ownInvalid), rules: ownFirst)) == 600)
    }

    @Test("RFC 8941 §4.2.2 dictionaries: what a targeted field may hold")
    func dictionarySyntax() {
        for valid in [
            "max-age=60", "private", "no-store, max-age=0", "max-age=60;x=1, a=(1 2 \"s\");b", "a=?1", "a=:aGk=:",
            "a=-1.5", "s-maxage=10,  stale-while-revalidate=5", "a=tok/en:x",
        ] {
            #expect(StructuredDictionary.isValid(valid), "\(valid)")
        }
        for invalid in [
            "", "Max-Age=1", "a=", "a=1.2345", "a=1234567890123456", ",a", "a,", "a=(1", "a=\"x\\y\"", "a b",
        ] {
            #expect(!StructuredDictionary.isValid(invalid), "\(invalid)")
        }
    }
}
