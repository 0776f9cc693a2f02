import AsyncHTTPClient
import Foundation
import Logging
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageTestSupport
import Testing

@testable import StowageProxy

/// `ProxyConfiguration.cache` is the proxy's cache configuration, used as given: nothing in
/// it is replaced when the proxy opens its cache, and what a proxy cannot work with is refused.
@Suite struct ProxyConfigurationTests {
    private func configuration(in directory: URL) throws -> ProxyConfiguration {
        try ProxyConfiguration(upstream: .init(parsing: "http://127.0.0.1:9"), cacheDirectory: directory, port: 0)
    }

    @Test("a private cache is refused with invalidConfiguration naming cache.rules.kind, not made shared")
    func privateCacheRefused() throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = try configuration(in: scratch.url)
        configuration.cache = HTTPCache.Configuration(kind: .private)
        let error = try #require(throws: StowageError.self) { try configuration.validate() }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("cache.rules.kind"), "\(error)")
        #expect(throws: StowageError.self) { _ = try CachingProxy(configuration: configuration) }

        configuration.cache.rules.kind = .shared
        try configuration.validate()
    }

    @Test("the cache opens with the capacities, rules and logger the configuration's cache gives")
    func cacheUsedAsGiven() async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = try configuration(in: scratch.url)
        #expect(configuration.cache.memoryCapacity == ByteCount(64_000_000), "the proxy's default memory")
        #expect(configuration.cache.diskCapacity == ByteCount(1_000_000_000), "the proxy's default disk")
        #expect(configuration.cache.rules.targetedFields == [CacheRules.cdnCacheControl])
        configuration.cache.memoryCapacity = ByteCount(3_000_000)
        configuration.cache.diskCapacity = ByteCount(7_000_000)
        configuration.cache.rules.staleIfErrorGrace = .seconds(90)
        configuration.cache.logger = Logger(label: "test.cache", factory: SwiftLogNoOpLogHandler.init)
        configuration.logger = Logger(label: "test.proxy", factory: SwiftLogNoOpLogHandler.init)
        let proxy = try CachingProxy(configuration: configuration)
        try await proxy.transport.client.shutdown()  // never run: its upstream client is closed here
        #expect(proxy.cache.configuration.memoryCapacity == ByteCount(3_000_000))
        #expect(proxy.cache.configuration.diskCapacity == ByteCount(7_000_000))
        #expect(proxy.cache.rules.staleIfErrorGrace == .seconds(90))
        #expect(proxy.cache.rules.kind == .shared)
        #expect(proxy.cache.configuration.logger.label == "test.cache", "the proxy's logger is not the cache's")
    }

    @Test("an out-of-range cache setting is invalidConfiguration from the proxy too, with the setting named")
    func cacheSettingOutOfRange() throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = try configuration(in: scratch.url)
        configuration.cache.rules.staleWhileUpdatingGrace = .seconds(-5)
        let error = try #require(throws: StowageError.self) { _ = try CachingProxy(configuration: configuration) }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("rules.staleWhileUpdatingGrace"), "\(error)")
    }

    // MARK: - Addresses

    @Test(
        "a port out of 0...65535 is invalidConfiguration naming the setting, not a listener on the port getaddrinfo wraps it to",
        arguments: [(-1, false), (65_536, false), (70_000, false), (-1, true), (70_000, true)]
    )
    func portOutOfRange(port: Int, admin: Bool) throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = try configuration(in: scratch.url)
        if admin {
            configuration.admin = .init(port: port, token: nil)
        } else {
            configuration.port = port
        }
        let error = try #require(throws: StowageError.self) { try configuration.validate() }
        #expect(error.code == .invalidConfiguration, "\(error)")
        #expect(error.message.contains(admin ? "admin.port" : "port"), "\(error)")
        #expect(error.message.contains("\(port)") && error.message.contains("65535"), "\(error)")
    }

    @Test("validate() refuses an admin listener off loopback without a token, as run() would")
    func adminListenerCheckedByValidate() throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = try configuration(in: scratch.url)
        configuration.admin = .init(host: "0.0.0.0", port: 0, token: nil)
        let error = try #require(throws: StowageError.self) { try configuration.validate() }
        #expect(error.code == .invalidConfiguration, "\(error)")
        #expect(error.message.contains("token"), "\(error)")
        #expect(throws: StowageError.self) { _ = try CachingProxy(configuration: configuration) }
        configuration.admin = .init(host: "0.0.0.0", port: 0, token: "")
        #expect(throws: StowageError.self) { try configuration.validate() }
        configuration.admin = .init(host: "0.0.0.0", port: 0, token: "secret")
        try configuration.validate()
    }

    @Test(
        "validate() refuses an upstream whose parts were set to what parsing refuses",
        arguments: [("ftp", "127.0.0.1:9", ""), ("http", "127.0.0.1:9\r\nX: y", ""), ("http", "127.0.0.1:9", "/a?b")]
    )
    func upstreamPartsChecked(scheme: String, authority: String, basePath: String) throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        var configuration = try configuration(in: scratch.url)
        configuration.upstream.scheme = scheme
        configuration.upstream.authority = authority
        configuration.upstream.basePath = basePath
        let error = try #require(throws: StowageError.self) { try configuration.validate() }
        #expect(error.code == .invalidConfiguration, "\(error)")
        #expect(error.message.contains("upstream"), "\(error)")
    }

    @Test(
        "an upstream with a query, a fragment, a control byte, a space, a bad port or no host is refused",
        arguments: [
            "http://127.0.0.1:8000/base?token=1", "http://127.0.0.1:8000/#top", "http://127.0.0.1:8000#top",
            "http://127.0.0.1:8000?x", "http://127.0.0.1:8000/a\r\nX-Injected: 1", "http://127.0.0.1\r\n:8000",
            "http://127.0.0.1:8000/a\0b", "http://127.0.0.1:8000/a b", "http://127.0.0.1\t:8000",
            "http://127.0.0.1:99999", "http://127.0.0.1:-1", "http://127.0.0.1:http", "http://127.0.0.1:",
            "http://:8000", "http://[::1", "http://user:pass@127.0.0.1:8000",
        ]
    )
    func upstreamRefused(text: String) throws {
        let error = try #require(throws: StowageError.self) { try ProxyConfiguration.Upstream(parsing: text) }
        #expect(error.code == .invalidArgument, "\(error)")
        #expect(error.message.contains("upstream"), "\(error)")
        #expect(!error.message.contains("\r") && !error.message.contains("\n"), "control bytes are escaped: \(error)")
    }

    @Test(
        "an upstream with a host, an optional port in range and a path prefix is taken",
        arguments: [
            ("http://127.0.0.1:8000", "127.0.0.1:8000", ""), ("https://example.com/api/", "example.com", "/api"),
            ("http://[::1]:8080/x", "[::1]:8080", "/x"), ("HTTP://h:65535", "h:65535", ""),
            ("http://[::1]", "[::1]", ""),
        ]
    )
    func upstreamTaken(text: String, authority: String, basePath: String) throws {
        let upstream = try ProxyConfiguration.Upstream(parsing: text)
        #expect(upstream.authority == authority)
        #expect(upstream.basePath == basePath)
    }
}
