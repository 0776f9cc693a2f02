import Foundation
import HTTPTypes
import Logging
import Prometheus
import StowageCache
import StowageCore
import StowageHTTPCache
import Tracing

/// How a ``CachingProxy`` listens, where it forwards and how it caches.
public struct ProxyConfiguration: Sendable {
    /// The address to listen on. Default `127.0.0.1`.
    public var host: String
    /// The port to listen on; 0 picks a free one. Default 8080.
    public var port: Int
    /// The origin every request goes to.
    public var upstream: Upstream
    /// The cache's directory.
    public var cacheDirectory: URL
    /// The longest the upstream may take to answer, and to stay silent between parts of a
    /// body; past it the client gets 504 (or, mid-body, its connection is cut and nothing is
    /// stored). Default 30 s.
    public var upstreamTimeout: Duration
    /// Where the proxy logs its requests, upstream failures and listeners. Default: labelled
    /// `org.stowage.proxy`, silent (give one to see logs). The cache logs to its own
    /// `cache.logger`; `stowage proxy --log-level` sets both.
    public var logger: Logger
    /// Adds a `Stowage-Cache-Trace` field to every response: why the cache answered as it did
    /// (`CachedResponse/trace`, steps joined by ` | `). For debugging: it shows cache
    /// internals to clients. Default off.
    public var sendsTrace: Bool
    /// The largest request body accepted; a longer one is answered `413 Content Too Large`
    /// before anything goes upstream. Request bodies are read whole before they are forwarded
    /// (nginx's `proxy_request_buffering`), so this bounds the memory one request can hold.
    /// Default 16 MB.
    public var maximumRequestBodySize: ByteCount
    /// The longest a client may pause while sending a request body; then it is answered
    /// `408 Request Timeout` and the connection closes (nginx's `client_body_timeout`).
    /// Default 60 s.
    public var requestBodyIdleTimeout: Duration
    /// What ``requestBodyIdleTimeout`` is measured by. Default `ContinuousClock()`; tests pass a
    /// clock they advance.
    public var requestBodyIdleClock: any Clock<Duration>
    /// The longest a client may take to send a request's head, from the moment the connection
    /// opens (or, on a kept-alive connection, from its first byte); then the connection closes
    /// (nginx's `client_header_timeout`, whose default this is). Bounds what a slowloris
    /// client that never finishes its head can hold. Default 60 s.
    public var requestHeadTimeout: Duration
    /// How long a kept-alive connection may stay idle between requests before the proxy closes
    /// it (nginx's `keepalive_timeout`, whose default this is). Default 75 s.
    public var keepAliveTimeout: Duration
    /// The longest a client may leave its response unread while the proxy has bytes waiting for
    /// it; then the connection closes (nginx's `send_timeout`, whose default this is). Bounds the
    /// connections and memory that clients who stop reading can hold. Default 60 s.
    public var sendTimeout: Duration
    /// What the event-loop deadlines are measured and scheduled by: ``upstreamTimeout`` (the
    /// upstream's answer and its silences), ``requestHeadTimeout``, ``keepAliveTimeout`` and
    /// ``sendTimeout``. Default `ContinuousClock()`: real time, on the event loops' own timers.
    /// Tests pass a clock they advance (`SteppedClock`): a deadline then passes when the clock
    /// does, and its timer runs on the connection's event loop, instead of after real time on a
    /// loaded machine. (An `https://` upstream's connection and read timeouts stay in
    /// AsyncHTTPClient, on real time.)
    public var timeoutClock: any Clock<Duration>
    /// The proxy's HTTP cache, used as given: its capacities, its RFC 9111 rules (RFC 9213
    /// targeted fields, lifetimes by status, stale graces, key rules, `Set-Cookie` handling),
    /// bypass, minimum uses, the largest body stored, its logger, and a level shared with other
    /// proxies (`sharedTier`, e.g. `RedisSharedTier`: proxies with the same one serve each
    /// other's stored responses). See `HTTPCache/Configuration`. Default ``defaultCache``.
    /// Its `clock` also gives the `Date` of the proxy's own answers and of responses that came
    /// without one.
    ///
    /// The proxy answers many clients, so its cache must be shared (`rules.kind` `.shared`):
    /// ``validate()`` refuses a private one rather than change it.
    public var cache: HTTPCache.Configuration
    /// Where purge and ban requests are taken (``AdminListener``); `nil` (the default) for none.
    public var admin: AdminListener?
    /// The registry the admin listener serves as `GET /metrics` (Prometheus text format); the
    /// process bootstraps swift-metrics with a `PrometheusMetricsFactory` on it so the cache's and
    /// the proxy's counters land there (`stowage proxy --admin-listen` does). Default `nil`.
    public var metricsRegistry: PrometheusCollectorRegistry?
    /// Where the proxy's spans go: one server span per request that is not a memory hit
    /// answered on the event loop (see `ProxyTracing`), with the cache's spans under it. Default
    /// `nil`: the process's tracer, `InstrumentationSystem.tracer`, read once per request (a
    /// no-op tracer until the application bootstraps one). The cache uses it too unless
    /// ``cache``'s own `tracer` is set. Tests pass an `InMemoryTracer` here.
    public var tracer: (any Tracer)?

    /// The admin listener's address and token.
    public struct AdminListener: Sendable, Hashable {
        /// The address to bind. Default `127.0.0.1`.
        public var host: String
        /// The port; 0 picks a free one.
        public var port: Int
        /// The token every admin request must give as `Authorization: Bearer TOKEN`; required
        /// unless ``host`` is a loopback address. The status page's GETs (`/`, `/status.json`,
        /// `/status.js`, `/status.css`) also take it as the password of HTTP Basic credentials,
        /// which a browser asks for; purge, ban and `/metrics` take the Bearer form only.
        public var token: String?

        /// A listener on `host`:`port` that requires `token` (required off loopback).
        public init(host: String = "127.0.0.1", port: Int, token: String? = nil) {
            self.host = host
            self.port = port
            self.token = token
        }

        /// Refuses an admin listener reachable from other machines without a token, and a token
        /// no client can send (see ``checkToken(_:)``).
        ///
        /// - Throws: `StowageError` `.invalidConfiguration` saying what is wrong and what to do,
        ///   or `.invalidArgument` from ``checkToken(_:)``.
        public func validate() throws {
            if let token { try Self.checkToken(token) }
            let loopback = host == "127.0.0.1" || host == "::1" || host == "localhost"
            if !loopback, token == nil {
                throw StowageError(
                    code: .invalidConfiguration,
                    message:
                        "the admin listener on \(host) is reachable from other machines: give it a token, or bind 127.0.0.1"
                )
            }
        }

        /// Refuses a token a client cannot send as `Authorization: Bearer TOKEN`: it must follow
        /// RFC 6750 §2.1's b64token syntax, one or more of `A-Z a-z 0-9 - . _ ~ + /` then any
        /// number of `=`, and be at most ``maximumTokenLength`` characters. An empty or blank
        /// token, or one with a space, a control byte (CR, LF) or a non-ASCII character would
        /// make the listener answer every request 401.
        ///
        /// - Throws: `StowageError` `.invalidArgument` saying what a token may contain.
        public static func checkToken(_ token: String) throws {
            let bytes = Array(token.utf8)
            let body = bytes.prefix { $0 != UInt8(ascii: "=") }
            let isB64Token =
                !body.isEmpty && body.allSatisfy(isB64TokenByte)
                && bytes[body.count...].allSatisfy { $0 == UInt8(ascii: "=") }
            guard isB64Token, bytes.count <= maximumTokenLength else {
                let what =
                    bytes.isEmpty
                    ? "is empty"
                    : bytes.count > maximumTokenLength
                        ? "has \(bytes.count) characters" : "has characters a client cannot send after 'Bearer '"
                throw StowageError(
                    code: .invalidArgument,
                    message: """
                        the admin token \(what): a token is 1 to \(maximumTokenLength) of A-Z a-z 0-9 - . _ ~ + / \
                        optionally followed by '=' (RFC 6750 §2.1 b64token), e.g. the output of 'openssl rand -hex 32'
                        """
                )
            }
        }

        /// The longest token accepted: well under the header size HTTP servers take (8 KiB).
        public static let maximumTokenLength = 4096

        private static func isB64TokenByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
                UInt8(ascii: "/"):
                true
            default:
                false
            }
        }
    }

    /// The proxy's cache defaults: a shared cache named `stowage` with 64 MB of memory and 1 GB
    /// of disk, that follows `CDN-Cache-Control` and takes bans by `Surrogate-Key` and
    /// `Cache-Tag`; every other setting is `HTTPCache.Configuration`'s default.
    public static var defaultCache: HTTPCache.Configuration {
        var cache = HTTPCache.Configuration(kind: .shared, name: "stowage")
        cache.memoryCapacity = ByteCount(64_000_000)
        cache.diskCapacity = ByteCount(1_000_000_000)
        cache.rules.targetedFields = [CacheRules.cdnCacheControl]
        cache.tagFields = [HTTPField.Name("Surrogate-Key")!, HTTPField.Name("Cache-Tag")!]
        return cache
    }

    /// A configuration with the defaults above.
    public init(upstream: Upstream, cacheDirectory: URL, host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
        self.upstream = upstream
        self.cacheDirectory = cacheDirectory
        upstreamTimeout = .seconds(30)
        logger = Logger(label: "org.stowage.proxy", factory: SwiftLogNoOpLogHandler.init)
        sendsTrace = false
        maximumRequestBodySize = ByteCount(16_000_000)
        requestBodyIdleTimeout = .seconds(60)
        requestBodyIdleClock = ContinuousClock()
        requestHeadTimeout = .seconds(60)
        keepAliveTimeout = .seconds(75)
        sendTimeout = .seconds(60)
        timeoutClock = ContinuousClock()
        cache = Self.defaultCache
        admin = nil
        metricsRegistry = nil
        tracer = nil
    }

    /// The longest timeout the proxy takes: one day. Longer ones overflowed the event loop's
    /// 64-bit nanosecond timers.
    public static let maximumTimeout = Duration.seconds(86_400)

    /// Checks the upstream (as ``Upstream/init(parsing:)`` does), the timeouts, the ports, the
    /// request body limit, the admin listener
    /// (``AdminListener/validate()``) and that ``cache`` is a shared cache
    /// (`StowageError` `.invalidConfiguration` naming the property and what it takes);
    /// ``CachingProxy/init(configuration:)`` calls it, and the cache checks the rest of
    /// ``cache`` when it opens.
    public func validate() throws {
        try cache.requireShared(
            by: "the proxy's cache",
            remedy: "set cache.rules.kind = .shared or start from ProxyConfiguration.defaultCache"
        )
        for (name, timeout) in [
            ("upstreamTimeout", upstreamTimeout), ("requestBodyIdleTimeout", requestBodyIdleTimeout),
            ("requestHeadTimeout", requestHeadTimeout), ("keepAliveTimeout", keepAliveTimeout),
            ("sendTimeout", sendTimeout),
        ] where !(timeout > .zero && timeout <= Self.maximumTimeout) {
            throw StowageError.invalidConfiguration(
                "the proxy's \(name) is \(timeout); give a duration above 0 and at most one day (86400 s)"
            )
        }
        // getaddrinfo(3) reads a port out of range modulo 65536 (70000 binds 4464, 65536 a free
        // port): refused here rather than listening somewhere else.
        for (name, port) in [("port", port), ("admin.port", admin?.port)] {
            guard let port, !(0...65_535).contains(port) else { continue }
            throw StowageError.invalidConfiguration(
                "the proxy's \(name) is \(port); give a port from 0 to 65535 (0 picks a free one)"
            )
        }
        // Upstream's parts are public: one set by hand gets the checks parsing makes.
        do {
            _ = try Upstream(parsing: upstream.description)
        } catch let error as StowageError {
            throw StowageError.invalidConfiguration("the proxy's upstream is not usable: \(error.message)")
        }
        // What run() would refuse is refused here, before a cache directory is opened.
        try admin?.validate()
        guard maximumRequestBodySize.rawValue >= 0 else {
            throw StowageError.invalidConfiguration(
                "the proxy's maximumRequestBodySize is \(maximumRequestBodySize.rawValue) bytes; give 0 or more"
            )
        }
    }

    /// The origin server: scheme, host and port, and a path prefix.
    public struct Upstream: Sendable, Hashable, CustomStringConvertible {
        /// `http` or `https`.
        public var scheme: String
        /// `host[:port]`.
        public var authority: String
        /// Prepended to every request path; empty for none.
        public var basePath: String

        /// Parses `http://host[:port][/prefix]`.
        ///
        /// - Throws: `StowageError` `.invalidArgument` naming what is wrong.
        public init(parsing text: String) throws {
            let quoted = PathInput.quoted(text)
            guard let schemeEnd = text.range(of: "://") else {
                throw StowageError.invalidArgument("the upstream \(quoted) has no scheme; write it as http://host:port")
            }
            let scheme = text[..<schemeEnd.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw StowageError.invalidArgument(
                    "the upstream \(quoted) must use http or https, not \(PathInput.quoted(scheme))"
                )
            }
            // Every request's path is appended to the upstream's: a query or fragment there, or a
            // byte a request line cannot carry (RFC 9112 §3: no space or control byte), would
            // garble every request rather than fail once at start.
            if let bad = text.unicodeScalars.first(where: {
                $0.value <= 0x20 || $0.value == 0x7F || $0 == "?" || $0 == "#"
            }) {
                let what = bad == "?" ? "a query ('?')" : bad == "#" ? "a fragment ('#')" : "a space or control byte"
                throw StowageError.invalidArgument(
                    "the upstream \(quoted) contains \(what); give scheme, host, port and an optional path prefix "
                        + "only, e.g. http://127.0.0.1:8000/api"
                )
            }
            let rest = text[schemeEnd.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = String(rest[..<slash])
            guard !authority.contains("@"), Self.isHostAndPort(authority) else {
                throw StowageError.invalidArgument(
                    "the upstream \(quoted) has no valid host and port; write it as http://host:port, with a port "
                        + "from 1 to 65535 and no user or password"
                )
            }
            var basePath = String(rest[slash...])
            while basePath.hasSuffix("/") { basePath.removeLast() }
            self.scheme = scheme
            self.authority = authority
            self.basePath = basePath
        }

        /// The text logs and messages show.
        public var description: String { "\(scheme)://\(authority)\(basePath)" }

        /// Whether `authority` is `host`, `host:port`, `[IPv6]` or `[IPv6]:port`, with a non-empty
        /// host and a port of digits from 1 to 65535.
        private static func isHostAndPort(_ authority: String) -> Bool {
            var host = Substring(authority)
            var port: Substring?
            if host.hasPrefix("[") {
                guard let close = host.firstIndex(of: "]") else { return false }
                let after = host[host.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { return false }
                    port = after.dropFirst()
                }
                host = host[host.index(after: host.startIndex)..<close]
            } else if let colon = host.lastIndex(of: ":") {
                port = host[host.index(after: colon)...]
                host = host[..<colon]
            }
            guard !host.isEmpty, !host.contains("[") && !host.contains("]") else { return false }
            guard let port else { return true }
            return !port.isEmpty && port.count <= 5 && port.allSatisfy { $0.isASCII && $0.isNumber }
                && (1...65_535).contains(Int(port) ?? 0)
        }
    }

    /// Parses a listen address `host:port` (IPv6 as `[::1]:8080`).
    ///
    /// - Throws: `StowageError` `.invalidArgument` when the port is missing or out of range.
    public static func parseListenAddress(_ text: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":") else {
            throw StowageError.invalidArgument("the listen address '\(text)' has no port; write it as 127.0.0.1:8080")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw StowageError.invalidArgument(
                "the listen address '\(text)' needs a host and a port in 0…65535, e.g. 127.0.0.1:8080"
            )
        }
        return (host, port)
    }
}
