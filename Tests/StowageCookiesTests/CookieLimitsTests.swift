import Foundation
import StowageCookies
import StowageCore
import StowageTestSupport
import Testing

/// Browsers' limits: cookie size, cookies per site, cookies in all.
@Suite struct CookieLimitsTests {
    let clock = ManualClock()

    @Test("name and value over 4096 bytes, or a 1 MB header, are refused; nothing stored before is lost")
    func sizeLimit() throws {
        let store = CookieStore(clock: clock.cacheClock)
        try store.setCookie("kept=1; Max-Age=60", from: url("http://example.com/"))
        let fits = "a=" + String(repeating: "v", count: 4095)
        #expect(try store.setCookie(fits, from: url("http://example.com/")).value.utf8.count == 4095)
        for header in ["b=" + String(repeating: "v", count: 4096), "c=" + String(repeating: "v", count: 1 << 20)] {
            #expect {
                try store.setCookie(header, from: url("http://example.com/"))
            } throws: { ($0 as? StowageError)?.code == .tooLarge }
        }
        #expect(store.allCookies.map(\.name) == ["kept", "a"])
    }

    @Test("over 50 cookies for one site, the least recently used goes")
    func perDomainLimit() throws {
        let store = CookieStore(clock: clock.cacheClock)
        for index in 0..<50 {
            try store.setCookie("c\(index)=1; Domain=example.com", from: url("http://www.example.com/"))
            clock.advance(by: .seconds(1))
        }
        // All 50 are sent (used) at once; c0 is then set again, so c1, the earliest to arrive
        // of the equally used rest, is the one to go.
        #expect(store.cookies(for: url("http://example.com/")).count == 50)
        clock.advance(by: .seconds(1))
        try store.setCookie("c0=again; Domain=example.com", from: url("http://a.example.com/"))
        try store.setCookie("new=1", from: url("http://b.example.com/"))
        let names = Set(store.allCookies.map(\.name))
        #expect(names.count == 50)
        #expect(names.contains("new"))
        #expect(names.contains("c0"))
        #expect(!names.contains("c1"))
        // Another site is counted apart.
        try store.setCookie("other=1", from: url("http://example.org/"))
        #expect(store.allCookies.count == 51)
    }

    @Test("the per-site eviction takes the least recently used cookie")
    func perDomainEvictsLeastRecentlyUsed() throws {
        var configuration = CookieStore.Configuration()
        configuration.maximumCookiesPerDomain = 3
        let store = CookieStore(configuration: configuration, clock: clock.cacheClock)
        for name in ["a", "b", "c"] {
            try store.setCookie("\(name)=1; Path=/\(name)", from: url("http://example.com/"))
            clock.advance(by: .seconds(1))
        }
        _ = store.cookies(for: url("http://example.com/a"))  // a is used; b is now the oldest use
        clock.advance(by: .seconds(1))
        try store.setCookie("d=1", from: url("http://example.com/"))
        #expect(Set(store.allCookies.map(\.name)) == ["a", "c", "d"])
    }

    @Test("over the total limit, the least recently used cookie of any site goes")
    func totalLimit() throws {
        var configuration = CookieStore.Configuration()
        configuration.maximumCookieCount = 3000
        let store = CookieStore(configuration: configuration, clock: clock.cacheClock)
        for index in 0..<3001 {
            try store.setCookie("c=\(index)", from: url("http://site\(index).example/"))
            clock.advance(by: .milliseconds(1))
        }
        let all = store.allCookies
        #expect(all.count == 3000)
        #expect(!all.contains { $0.domain == "site0.example" })
        #expect(all.contains { $0.domain == "site3000.example" })
    }
}
