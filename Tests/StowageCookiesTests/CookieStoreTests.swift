import Foundation
import StowageCookies
import StowageCore
import StowageTestSupport
import Testing

func url(_ string: String) -> URL { URL(string: string)! }

/// RFC 6265's matching, scoping and expiry rules on a store in memory.
@Suite struct CookieStoreTests {
    let clock = ManualClock()
    var store: CookieStore { CookieStore(clock: clock.cacheClock) }

    // MARK: Domain matching (§5.1.3)

    @Test("§5.1.3 a Domain cookie goes to the domain and its subdomains, not to look-alikes")
    func domainMatching() throws {
        let store = self.store
        try store.setCookie("a=1; Domain=example.com", from: url("http://www.example.com/"))
        #expect(store.cookieHeader(for: url("http://example.com/")) == "a=1")
        #expect(store.cookieHeader(for: url("http://deep.www.example.com/")) == "a=1")
        #expect(store.cookieHeader(for: url("http://badexample.com/")) == nil)
        #expect(store.cookieHeader(for: url("http://example.org/")) == nil)
    }

    @Test("§5.2.3 a leading dot and capitals in Domain are ignored")
    func domainNormalised() throws {
        let store = self.store
        let cookie = try store.setCookie("a=1; Domain=.EXAMPLE.com", from: url("http://Www.Example.com/"))
        #expect(cookie.domain == "example.com")
        #expect(!cookie.isHostOnly)
    }

    @Test("§5.3 step 6 a Domain the host does not domain-match is refused")
    func domainMismatchRefused() throws {
        let store = self.store
        #expect(throws: StowageError.self) {
            try store.setCookie("a=1; Domain=other.com", from: url("http://example.com/"))
        }
        #expect(throws: StowageError.self) {
            try store.setCookie("a=1; Domain=www.example.com", from: url("http://example.com/"))
        }
        let refusals = try store.setCookies(["a=1; Domain=other.com"], from: url("http://example.com/"))
        #expect(refusals.map(\.code) == [.domainMismatch])
        #expect(store.allCookies.isEmpty)
    }

    // MARK: Host-only cookies (§5.3 step 6)

    @Test("§5.3 step 6 without Domain a cookie is host-only: not sent to subdomains")
    func hostOnly() throws {
        let store = self.store
        let cookie = try store.setCookie("a=1", from: url("http://example.com/"))
        #expect(cookie.isHostOnly)
        #expect(store.cookieHeader(for: url("http://example.com/x")) == "a=1")
        #expect(store.cookieHeader(for: url("http://www.example.com/")) == nil)
    }

    // MARK: Path matching (§5.1.4)

    @Test(
        "§5.1.4 path matching",
        arguments: [
            ("/docs", "/docs", true), ("/docs", "/docs/", true), ("/docs", "/docs/a", true),
            ("/docs", "/docsx", false), ("/docs/", "/docs/a", true), ("/docs/", "/docs", false),
            ("/", "/anything", true), ("/a/b", "/a", false),
        ]
    )
    func pathMatching(cookiePath: String, requestPath: String, matches: Bool) throws {
        let store = self.store
        try store.setCookie("a=1; Path=\(cookiePath)", from: url("http://example.com/"))
        #expect((store.cookieHeader(for: url("http://example.com\(requestPath)")) != nil) == matches)
    }

    @Test("§5.1.4 the default path is the request path's directory")
    func defaultPath() throws {
        let store = self.store
        #expect(try store.setCookie("a=1", from: url("http://example.com/docs/page?q=1")).path == "/docs")
        #expect(try store.setCookie("b=1", from: url("http://example.com/page")).path == "/")
        #expect(try store.setCookie("c=1; Path=relative", from: url("http://example.com/x/y")).path == "/x")
    }

    // MARK: Secure

    @Test("Secure cookies are sent only over https and accepted only from https")
    func secure() throws {
        let store = self.store
        try store.setCookie("s=1; Secure", from: url("https://example.com/"))
        try store.setCookie("p=1", from: url("https://example.com/"))
        #expect(store.cookieHeader(for: url("https://example.com/")) == "s=1; p=1")
        #expect(store.cookieHeader(for: url("http://example.com/")) == "p=1")
        #expect {
            try store.setCookie("t=1; Secure", from: url("http://example.com/"))
        } throws: { ($0 as? StowageError)?.code == .notSecure }
        #expect(throws: StowageError.self) {
            try store.setCookie("__Host-x=1; Secure; Domain=example.com", from: url("https://example.com/"))
        }
        #expect {
            try store.setCookie("__Secure-x=1", from: url("https://example.com/"))
        } throws: { ($0 as? StowageError)?.code == .notSecure }
        #expect(try store.setCookie("__Host-x=1; Secure; Path=/", from: url("https://example.com/")).isSecure)
    }

    @Test("HttpOnly and SameSite are stored; an HTTP client sends the cookie whatever they say")
    func httpOnlyAndSameSite() throws {
        let store = self.store
        let cookie = try store.setCookie("a=1; HttpOnly; SameSite=Strict", from: url("http://example.com/"))
        #expect(cookie.isHTTPOnly)
        #expect(cookie.sameSite == .strict)
        #expect(try store.setCookie("b=1; SameSite=bogus", from: url("http://example.com/")).sameSite == nil)
        #expect(store.cookieHeader(for: url("http://example.com/")) == "a=1; b=1")
    }

    // MARK: Expiry

    @Test("a cookie with Max-Age is gone once it has passed")
    func expiry() throws {
        let store = self.store
        try store.setCookie("a=1; Max-Age=60", from: url("http://example.com/"))
        try store.setCookie("b=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT", from: url("http://example.com/"))
        #expect(store.cookieHeader(for: url("http://example.com/")) == "a=1")
        clock.advance(by: .seconds(61))
        #expect(store.cookieHeader(for: url("http://example.com/")) == nil)
        #expect(store.allCookies.isEmpty)
    }

    @Test("§5.3 step 3 Max-Age wins over Expires, whichever comes first")
    func maxAgePrecedence() throws {
        let store = self.store
        let future = "Expires=Fri, 01 Jan 2100 00:00:00 GMT"
        let a = try store.setCookie("a=1; \(future); Max-Age=10", from: url("http://example.com/"))
        #expect(a.expiresDate == clock.now.addingTimeInterval(10))
        let b = try store.setCookie(
            "b=1; Max-Age=10; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
            from: url("http://example.com/")
        )
        #expect(b.expiresDate == clock.now.addingTimeInterval(10))
    }

    @Test("Max-Age ≤ 0 deletes the cookie of that name, domain and path")
    func maxAgeZeroDeletes() throws {
        let store = self.store
        try store.setCookie("a=1; Max-Age=100", from: url("http://example.com/"))
        try store.setCookie("a=gone; Max-Age=0", from: url("http://example.com/"))
        #expect(store.allCookies.isEmpty)
        try store.setCookie("b=1", from: url("http://example.com/"))
        try store.setCookie("b=1; Max-Age=-5", from: url("http://example.com/"))
        #expect(store.allCookies.isEmpty)
    }

    @Test("a huge Max-Age or Expires is capped at 400 days; a malformed one is ignored")
    func lifetimeCapped() throws {
        let store = self.store
        let cap = clock.now.addingTimeInterval(400 * 86_400)
        #expect(
            try store.setCookie("a=1; Max-Age=99999999999999999999999", from: url("http://example.com/")).expiresDate
                == cap
        )
        #expect(
            try store.setCookie("b=1; Expires=Fri, 01 Jan 9999 00:00:00 GMT", from: url("http://example.com/"))
                .expiresDate == cap
        )
        // Malformed attributes leave a session cookie (§5.2.1, §5.2.2).
        #expect(try store.setCookie("c=1; Max-Age=NaN", from: url("http://example.com/")).expiresDate == nil)
        #expect(try store.setCookie("d=1; Max-Age=1e9", from: url("http://example.com/")).expiresDate == nil)
        #expect(try store.setCookie("e=1; Expires=NaN", from: url("http://example.com/")).expiresDate == nil)
        #expect(
            try store.setCookie("f=1; Expires=31 Feb 2030 00:00:00", from: url("http://example.com/")).expiresDate
                == nil
        )
    }

    // MARK: Replacement and order

    @Test("§5.3 step 11 a cookie with the same name, domain and path replaces the old one, keeping its creation date")
    func replacement() throws {
        let store = self.store
        let first = try store.setCookie("a=1", from: url("http://example.com/"))
        clock.advance(by: .seconds(5))
        try store.setCookie("a=2", from: url("http://example.com/"))
        try store.setCookie("a=3; Path=/x", from: url("http://example.com/"))
        let all = store.allCookies
        #expect(all.count == 2)
        #expect(all.first { $0.path == "/" }?.value == "2")
        #expect(all.first { $0.path == "/" }?.creationDate == first.creationDate)
    }

    @Test("§5.4 step 2 longer paths first, then earlier creation")
    func ordering() throws {
        let store = self.store
        try store.setCookie("late=1; Path=/", from: url("http://example.com/"))
        try store.setCookie("deep=1; Path=/a/b", from: url("http://example.com/"))
        clock.advance(by: .seconds(1))
        try store.setCookie("later=1; Path=/", from: url("http://example.com/"))
        try store.setCookie("mid=1; Path=/a", from: url("http://example.com/"))
        #expect(store.cookieHeader(for: url("http://example.com/a/b/c")) == "deep=1; mid=1; late=1; later=1")
    }

    // MARK: Public suffixes and IP addresses (§5.3 step 5)

    @Test(
        "§5.3 step 5 a Domain that is a public suffix is refused",
        arguments: [
            ("http://example.com/", "com"), ("http://www.example.co.uk/", "co.uk"),
            ("http://me.github.io/", "github.io"), ("http://a.example.com/", ".COM"),
        ]
    )
    func bareTLDRefused(from request: String, domain: String) throws {
        let store = CookieStore(configuration: builtInOnly(), clock: clock.cacheClock)
        #expect {
            try store.setCookie("a=1; Domain=\(domain)", from: url(request))
        } throws: { ($0 as? StowageError)?.code == .publicSuffix }
        #expect(store.allCookies.isEmpty)
    }

    @Test("§5.3 step 5 a public-suffix Domain equal to the host makes a host-only cookie")
    func publicSuffixHostItself() throws {
        let store = self.store
        let cookie = try store.setCookie("a=1; Domain=localhost", from: url("http://localhost:8080/"))
        #expect(cookie.isHostOnly)
        #expect(store.cookieHeader(for: url("http://localhost/")) == "a=1")
    }

    @Test("an IP-address host accepts only a Domain equal to its address")
    func ipAddressMismatch() throws {
        let store = self.store
        #expect {
            try store.setCookie("a=1; Domain=0.0.1", from: url("http://127.0.0.1/"))
        } throws: { ($0 as? StowageError)?.code == .domainMismatch }
        #expect {
            try store.setCookie("a=1; Domain=127.0.0.2", from: url("http://127.0.0.1/"))
        } throws: { ($0 as? StowageError)?.code == .domainMismatch }
        try store.setCookie("a=1; Domain=127.0.0.1", from: url("http://127.0.0.1/"))
        try store.setCookie("b=1", from: url("http://127.0.0.1:9000/"))
        #expect(store.cookieHeader(for: url("http://127.0.0.1/")) == "a=1; b=1")
    }

    // MARK: Bad input

    @Test(
        "control bytes, a missing name=value or an empty name make the cookie ignored",
        arguments: ["a=1\u{0}; Path=/", "a=1\r\nX-Injected: 1", "novalue", "=1", "  =x", "a=\u{7F}"]
    )
    func malformedIgnored(header: String) throws {
        let store = self.store
        try store.setCookie("kept=1", from: url("http://example.com/"))
        #expect {
            try store.setCookie(header, from: url("http://example.com/"))
        } throws: { ($0 as? StowageError)?.code == .malformed }
        #expect(store.cookieHeader(for: url("http://example.com/")) == "kept=1")
    }

    @Test("unknown and malformed attributes are skipped, the cookie kept")
    func malformedAttributes() throws {
        let store = self.store
        let cookie = try store.setCookie(
            "a= 1 ;;; Foo=bar; =x; Domain=; Path; Secure=no",
            from: url("https://example.com/p/q")
        )
        #expect(cookie.value == "1")
        #expect(cookie.isHostOnly)
        #expect(cookie.path == "/p")
        #expect(cookie.isSecure)
    }

    @Test("a URL without a host cannot take cookies")
    func invalidURL() {
        let store = self.store
        #expect {
            try store.setCookie("a=1", from: URL(filePath: "/tmp/x"))
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        #expect(store.cookieHeader(for: URL(filePath: "/tmp/x")) == nil)
    }
}

/// A configuration with the built-in public suffix list, so tests do not depend on the
/// machine's `publicsuffix` package.
func builtInOnly() -> CookieStore.Configuration {
    var configuration = CookieStore.Configuration()
    configuration.publicSuffixes = .builtIn
    return configuration
}
