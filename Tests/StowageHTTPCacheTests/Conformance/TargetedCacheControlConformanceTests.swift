import Foundation
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
        #expect(lifetime == .seconds(600))
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
        #expect(cdn.freshnessLifetime(of: entry) == .seconds(0))
        #expect(sharedRules.freshnessLifetime(of: stored(response(200, pairs))) == .seconds(3_600))
    }

    @Test("RFC 9213 §2.1 an invalid targeted field is ignored: Cache-Control applies")
    func invalidTargetedIgnored() {
        for invalid in ["Max-Age=600", "max-age=600s", "max-age=600,", "max-age=\"unterminated", "", "  "] {
            let pairs = [("Cache-Control", "no-store"), ("CDN-Cache-Control", invalid)]
            #expect(!isStorable(cdn, pairs), "\(invalid.debugDescription)")
        }
    }

    /// The freshness lifetime in whole seconds, as the fields give it.
    private func lifetime(_ rules: CacheRules, _ pairs: [(String, String)]) -> Int64 {
        rules.freshnessLifetime(of: stored(response(200, pairs), rules: rules)).components.seconds
    }

    @Test("RFC 9213 §2.1 a member whose value has the wrong type for its directive invalidates the field")
    func wrongTypeIgnored() {
        for invalid in [
            "max-age=\"10000\"", "max-age=10000.5", "max-age=-1", "max-age=tenthousand", "max-age=?1",
            "max-age=(10000)", "max-age=:MTAwMDA=:", "s-maxage=\"600\"", "s-maxage=six", "stale-if-error=\"60\"",
            "no-store=?0", "no-store=1", "no-store=\"yes\"", "public=?0", "private=1", "private=set-cookie",
            "private=(\"set-cookie\")", "no-cache=?0", "no-cache=2",
        ] {
            // The invalid field is ignored as if absent: Cache-Control's no-store applies.
            #expect(!isStorable(cdn, [("Cache-Control", "no-store"), ("CDN-Cache-Control", invalid)]), "\(invalid)")
            // With Cache-Control's max-age, that is the lifetime; a wrong-typed member is not
            // dropped alone, leaving the rest of the field to win.
            let pairs = [("Cache-Control", "max-age=5"), ("CDN-Cache-Control", "max-age=600, \(invalid)")]
            #expect(lifetime(cdn, pairs) == 5, "\(invalid)")
        }
    }

    @Test("RFC 9213 §2.1 a wrong-typed member of the first targeted field hands over to the next one")
    func wrongTypeFallsThroughTargetedFields() {
        let pairs = [
            ("Stowage-Cache-Control", "max-age=\"30\""), ("CDN-Cache-Control", "max-age=600"),
            ("Cache-Control", "no-store"),
        ]
        #expect(lifetime(ownFirst, pairs) == 600)
    }

    @Test("RFC 9213 §2.1 the typed arguments a targeted field may give are followed")
    func typedArguments() {
        #expect(lifetime(cdn, [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=600")]) == 600)
        #expect(lifetime(cdn, [("CDN-Cache-Control", "s-maxage=60, max-age=600")]) == 60)
        #expect(!isStorable(cdn, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store=?1")]))
        #expect(!isStorable(cdn, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "private")]))
        // RFC 9111 §1.2.2: a delta-seconds above 2³¹ counts as 2³¹.
        let largest = Int64(CacheControl.maximumDeltaSeconds)
        #expect(lifetime(cdn, [("CDN-Cache-Control", "max-age=99999999999")]) == largest)
    }

    @Test("RFC 9213 §2.1 no-cache and private take Boolean true or a String of field names")
    func fieldListArguments() {
        let qualified = CacheControl(targeted: "private=\"Set-Cookie, X-Id\", no-cache=\"X-Token\"")
        #expect(qualified?.privateFields == ["set-cookie", "x-id"])
        #expect(qualified?.noCacheFields == ["x-token"])
        #expect(qualified?.isUnqualifiedPrivate == false)
        let bare = CacheControl(targeted: "private, no-cache=?1")
        #expect(bare?.isUnqualifiedPrivate == true)
        #expect(bare?.isUnqualifiedNoCache == true)
        // A shared cache may store a response whose private names only some fields (§5.2.2.7).
        #expect(isStorable(cdn, [("CDN-Cache-Control", "max-age=60, private=\"X-Id\""), ("X-Id", "1")]))
    }

    @Test("RFC 9213 §2.1 parameters are ignored on all members")
    func parametersIgnored() {
        #expect(lifetime(cdn, [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=600;unit=s")]) == 600)
        #expect(!isStorable(cdn, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store;a=?0")]))
        #expect(CacheControl(targeted: "private=\"X-Id\";a=1")?.privateFields == ["x-id"])
        // A parameter is still checked for syntax: an invalid one invalidates the field.
        #expect(CacheControl(targeted: "max-age=600;Unit=s") == nil)
    }

    @Test("RFC 8941 §4.2.2 a key given twice in a targeted field counts with its last value")
    func duplicateKeysLastWins() {
        // In Cache-Control, conflicting max-age values make the response stale (RFC 9111 §4.2.1).
        #expect(lifetime(cdn, [("CDN-Cache-Control", "max-age=10, max-age=600")]) == 600)
        #expect(lifetime(cdn, [("CDN-Cache-Control", "max-age=600"), ("CDN-Cache-Control", "max-age=10")]) == 10)
        #expect(
            CacheControl(targeted: "max-age=10, no-store, max-age=600")?.directives.map(\.name) == [
                "max-age", "no-store",
            ]
        )
        // The last value is the one checked for its type.
        #expect(
            lifetime(cdn, [("Cache-Control", "max-age=5"), ("CDN-Cache-Control", "max-age=600, max-age=\"1\"")]) == 5
        )
        #expect(
            lifetime(cdn, [("Cache-Control", "max-age=5"), ("CDN-Cache-Control", "max-age=\"1\", max-age=600")]) == 600
        )
    }

    @Test("RFC 9213 §2.1 unknown directives in a targeted field may have any type")
    func unknownDirectivesAnyType() {
        let value = "max-age=600, x-a=1.5, x-b=:aGk=:, x-c=(1 2), x-d=?0, x-e=\"s\", x-f=tok"
        #expect(lifetime(cdn, [("Cache-Control", "no-store"), ("CDN-Cache-Control", value)]) == 600)
    }

    @Test("RFC 9213 §2.2 the first targeted field in the cache's list that is present and valid wins")
    func firstValidWins() {
        let both = [
            ("Stowage-Cache-Control", "max-age=30"), ("CDN-Cache-Control", "max-age=600"),
            ("Cache-Control", "no-store"),
        ]
        #expect(ownFirst.freshnessLifetime(of: stored(response(200, both), rules: ownFirst)) == .seconds(30))
        let ownInvalid = [("Stowage-Cache-Control", "MAX-AGE"), ("CDN-Cache-Control", "max-age=600")]
        #expect(ownFirst.freshnessLifetime(of: stored(response(200, ownInvalid), rules: ownFirst)) == .seconds(600))
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
