import Foundation
import StowageCookies
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a hostile server, a hostile URL or a hostile file cannot make the store do.
@Suite struct CookieHardeningTests {
    let clock = ManualClock()
    var store: CookieStore { CookieStore(configuration: builtInOnly(), clock: clock.cacheClock) }

    @Test("RFC 6265bis §5.7 step 16 an http response cannot replace, delete or shadow a Secure cookie")
    func insecureOriginCannotTouchSecureCookie() throws {
        let store = self.store
        try store.setCookie(
            "id=good; Secure; Path=/; Domain=example.com; Max-Age=3600",
            from: url("https://example.com/")
        )
        for header in [
            "id=evil; Path=/", "id=; Path=/; Max-Age=0", "id=evil; Path=/account", "id=evil; Domain=example.com",
        ] {
            #expect(throws: StowageError.self, "\(header)") {
                try store.setCookie(header, from: url("http://www.example.com/"))
            }
        }
        #expect(store.cookieHeader(for: url("https://www.example.com/account")) == "id=good")
        // Other names, and the same name from https, are still taken.
        try store.setCookie("other=1", from: url("http://example.com/"))
        try store.setCookie("id=new; Secure; Path=/; Domain=example.com", from: url("https://example.com/"))
        #expect(store.cookieHeader(for: url("https://example.com/")) == "id=new; other=1")
    }

    @Test("RFC 6265bis §5.7 http cookies flooding a site evict its non-Secure cookies, never the Secure one first")
    func cookieJarOverflowKeepsSecureCookie() throws {
        let store = self.store
        try store.setCookie("id=good; Secure; Path=/; Max-Age=3600", from: url("https://example.com/"))
        clock.advance(by: .seconds(1))
        for index in 0..<60 {
            try store.setCookie("flood\(index)=1; Path=/; Max-Age=3600", from: url("http://example.com/"))
        }
        #expect(store.allCookies.count == 50)
        #expect(throws: StowageError.self) { try store.setCookie("id=evil; Path=/", from: url("http://example.com/")) }
        #expect(store.cookies(for: url("https://example.com/")).first { $0.name == "id" }?.value == "good")
    }

    @Test("a Domain=IP cookie goes to that address only, not to a host name ending in it")
    func ipDomainCookieIsHostOnly() throws {
        let store = self.store
        let cookie = try store.setCookie("a=1; Domain=127.0.0.1", from: url("http://127.0.0.1/"))
        #expect(cookie.isHostOnly)
        #expect(store.cookieHeader(for: url("http://127.0.0.1:8080/")) == "a=1")
        #expect(store.cookieHeader(for: url("http://evil.127.0.0.1/")) == nil)
    }

    @Test("RFC 6265bis §4.1.3 the __Secure- and __Host- prefixes match in any case")
    func cookiePrefixesIgnoreCase() throws {
        let store = self.store
        #expect(throws: StowageError.self) { try store.setCookie("__secure-id=x", from: url("http://example.com/")) }
        #expect(throws: StowageError.self) {
            try store.setCookie("__HOST-id=x; Secure; Domain=example.com", from: url("https://www.example.com/"))
        }
        #expect(throws: StowageError.self) {
            try store.setCookie("__host-id=x; Secure; Path=/a", from: url("https://example.com/a/b"))
        }
        // §4.1.3.2: the Path attribute must be there and be "/"; a default path of "/" is not it.
        #expect(throws: StowageError.self) {
            try store.setCookie("__Host-id=x; Secure", from: url("https://example.com/"))
        }
        #expect(store.allCookies.isEmpty)
        try store.setCookie("__HOST-id=x; Secure; Path=/", from: url("https://example.com/"))
        #expect(store.allCookies.count == 1)
    }

    @Test("a percent-encoded host neither receives nor sets a domain's cookies (evil.com%00.example.com)")
    func percentEncodedHostScopesNothing() throws {
        let store = self.store
        try store.setCookie("a=1; Domain=example.com", from: url("http://www.example.com/"))
        for host in ["evil.com%00.example.com", "evil.com%23.example.com", "evil.com%2F.example.com"] {
            #expect(store.cookieHeader(for: url("http://\(host)/")) == nil, "\(host)")
            #expect(throws: StowageError.self, "\(host)") {
                try store.setCookie("b=1; Domain=example.com", from: url("http://\(host)/"))
            }
        }
        #expect(store.allCookies.map(\.name) == ["a"])
    }

    @Test("an IDN public suffix is refused as Domain in Punycode, the form request hosts arrive in")
    func idnPublicSuffixInPunycode() throws {
        var configuration = CookieStore.Configuration()
        configuration.publicSuffixes = try #require(PublicSuffixList(datFile: "// test list\ncn\n公司.cn\n*.香港\n"))
        let store = CookieStore(configuration: configuration, clock: clock.cacheClock)
        #expect(configuration.publicSuffixes.isPublicSuffix("xn--55qx5d.cn"))
        for (header, from) in [
            ("a=1; Domain=xn--55qx5d.cn", "http://shop.xn--55qx5d.cn/"),
            ("a=1; Domain=公司.cn", "http://shop.xn--55qx5d.cn/"),
            ("a=1; Domain=公司.cn", "http://shop.公司.cn/"),
        ] {
            #expect(throws: StowageError.self, "\(header) from \(from)") {
                try store.setCookie(header, from: url(from))
            }
        }
        // A site under the suffix may still scope its cookies to itself, in either spelling.
        let cookie = try store.setCookie("b=1; Domain=Shop.公司.cn", from: url("http://www.shop.xn--55qx5d.cn/"))
        #expect(cookie.domain == "shop.xn--55qx5d.cn" && !cookie.isHostOnly)
        #expect(store.cookieHeader(for: url("http://shop.公司.cn/")) == "b=1")
        #expect(store.cookieHeader(for: url("http://other.公司.cn/")) == nil)
    }

    @Test("10,000 Set-Cookie fields in one response and cookies of 6,000 sites cost linear time, LRU kept")
    func evictionIsLinear() throws {
        let store = self.store
        let start = ContinuousClock.now
        let refusals = try store.setCookies((0..<10_000).map { "c\($0)=1; Max-Age=3600" }, from: url("http://one.com/"))
        #expect(refusals.isEmpty)
        #expect(store.allCookies.map(\.name) == (9950..<10_000).map { "c\($0)" })
        for index in 0..<6000 {
            try store.setCookie("c=\(index); Max-Age=3600", from: url("http://site\(index).example/"))
        }
        let elapsed = ContinuousClock.now - start
        #expect(store.allCookies.count == 3000)
        #expect(store.allCookies.first?.domain == "site3000.example")
        // A sort of the store per evicting cookie took about 100 s here (debug build, two
        // cores); a walk of it about 12 s.
        #expect(elapsed < .seconds(60))
    }

    @Test(
        "a FIFO or a directory in place of the cookie file is refused at once, not waited on",
        .timeLimit(.minutes(5))
    )
    func nonRegularFileRefused() async throws {
        let scratch = try TemporaryDirectory()
        let fifo = scratch.url.appending(path: "fifo.stowcookies")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        // Were the open to block on the FIFO, the time limit cancels the test: a writer then
        // lets the open go on (to an empty store, which the expectation refuses) instead of
        // hanging the run.
        let code = try await withTaskCancellationHandler {
            try await onOwnThread { () -> StowageError.Code? in
                do {
                    _ = try CookieStore.open(at: fifo)
                    return nil
                } catch {
                    return (error as? StowageError)?.code
                }
            }
        } onCancel: {
            let descriptor = open(fifo.path, O_WRONLY | O_NONBLOCK)
            if descriptor >= 0 { close(descriptor) }
        }
        #expect(code == .invalidArgument)
        let directory = scratch.url.appending(path: "dir.stowcookies")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        #expect { try CookieStore.open(at: directory) } throws: { ($0 as? StowageError)?.code == .invalidArgument }
    }

    @Test("the cookie file is 0600, and a save into an unwritable directory throws and keeps the cookies in memory")
    func fileModeAndUnwritableDirectory() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "Cookies")
        let file = directory.appending(path: "cookies.stowcookies")
        let store = try CookieStore.open(at: file, configuration: builtInOnly(), clock: clock.cacheClock)
        try store.setCookie("a=1; Max-Age=3600", from: url("http://example.com/"))
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)
        guard geteuid() != 0 else { return }  // root writes anywhere
        #expect(chmod(directory.path, 0o500) == 0)
        defer { chmod(directory.path, 0o700) }
        #expect(throws: StowageError.self) {
            try store.setCookie("b=1; Max-Age=3600", from: url("http://example.com/"))
        }
        #expect(store.cookieHeader(for: url("http://example.com/")) == "a=1; b=1")
        chmod(directory.path, 0o700)
        try store.save()
        let reopened = try CookieStore.open(at: file, configuration: builtInOnly(), clock: clock.cacheClock)
        #expect(reopened.allCookies.map(\.name) == ["a", "b"])
    }

    @Test("a 4 MB garbage line costs that record only; a file over 64 MiB is refused and left as it is")
    func hugeLineAndHugeFile() throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "cookies.stowcookies")
        let store = try CookieStore.open(at: file, configuration: builtInOnly(), clock: clock.cacheClock)
        try store.setCookie("a=1; Max-Age=3600", from: url("http://example.com/"))
        try store.setCookie("b=1; Max-Age=3600", from: url("http://example.com/"))
        var lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.insert("0badf00d " + String(repeating: "{", count: 4 << 20), at: 2)
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let reopened = try CookieStore.open(at: file, configuration: builtInOnly(), clock: clock.cacheClock)
        #expect(reopened.damagedRecordCount == 1)
        #expect(reopened.allCookies.map(\.name) == ["a", "b"])

        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: (64 << 20) + 1)
        try handle.close()
        #expect { try CookieStore.open(at: file) } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int
        #expect(size == (64 << 20) + 1)
    }
}
