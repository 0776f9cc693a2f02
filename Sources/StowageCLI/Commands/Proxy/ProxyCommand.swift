import ArgumentParser
import Foundation
import HTTPTypes
import Logging
import Metrics
import Prometheus
import StowageCore
import StowageHTTPCache
import StowageProxy
import StowageRedis
import StowageSharedTier

/// `stowage proxy`: a caching reverse proxy (a shared RFC 9111 cache) in front of one origin.
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Run a caching reverse proxy (RFC 9111 shared cache) in front of an upstream HTTP server.",
        discussion: """
            Responses are cached by their Cache-Control/Expires headers (s-maxage first), validated \
            with ETag/Last-Modified, and served with Age and Cache-Status. Concurrent requests for one \
            uncached URL make one upstream request. Upstream failures answer 502, timeouts 504 (or a \
            stale response where stale-if-error allows). SIGINT or SIGTERM stop it gracefully.

            The cache lives in --cache-dir (default: the 'stowage' container's caches/proxy), one \
            proxy per directory: a second one there exits 2 (a purge through one would not reach \
            what the other keeps in memory; share caches through --shared instead). The \
            bound port is printed on standard output as 'listening on HOST:PORT'; logs go to \
            standard error.

            With --shared redis://HOST:PORT (a Redis or Valkey server, or any node of a Redis \
            Cluster; rediss:// for TLS), proxies sharing that server serve each other's cached \
            responses; when it is unreachable each proxy goes on with its own cache. A rediss:// \
            server whose certificate a private CA signed needs --shared-ca-file CA.pem.

            --config FILE.json reads these options from a JSON object keyed by their long names \
            ({"upstream": "http://127.0.0.1:8000", "cache-valid": ["200=10m"], "trace": true}); \
            options on the command line come after the file's, so a single-valued one wins and a \
            repeatable one adds.

            With --admin-listen, 'stowage proxy invalidate URL | --prefix P | --tag T' removes \
            stored responses from the running proxy, and a browser opened at http://HOST:PORT/ \
            shows its status page (requests, hit ratio, cache size, upstream latency, recent \
            purges; the same figures as JSON at /status.json).

            Examples:
              stowage proxy --upstream http://127.0.0.1:8000 --listen 127.0.0.1:8080
              stowage proxy --config proxy.json --shared redis://10.0.0.7:6379
              stowage proxy --upstream http://10.0.0.2 --admin-listen 127.0.0.1:9000
            """,
        subcommands: [ProxyInvalidateCommand.self]
    )

    @Option(help: ArgumentHelp("Read options from a JSON file (keys are the long option names).", valueName: "FILE"))
    var config: String?

    @OptionGroup var options: GlobalOptions

    @Option(help: "Address to listen on, HOST:PORT (port 0 picks a free one).")
    var listen = "127.0.0.1:8080"

    @Option(help: "The upstream origin, e.g. http://127.0.0.1:8000 (required to run the proxy).")
    var upstream: String?

    @Option(help: "Directory of the cache.")
    var cacheDir: String?

    @Option(help: "Bytes of responses kept in memory, e.g. 64MB.", transform: { try parseSize($0) })
    var memoryCapacity = ByteCount(64_000_000)

    @Option(
        help: """
            Bytes of responses kept on disk, e.g. 1GB; hits read from disk are kept ready to send \
            in an anonymous file of up to a quarter of this beside it.
            """,
        transform: { try parseSize($0) }
    )
    var diskCapacity = ByteCount(1_000_000_000)

    @Option(help: "Seconds one upstream exchange may take before the client gets 504.")
    var upstreamTimeout = 30

    @Option(
        help:
            "The largest request body accepted, e.g. 16MB; longer ones get 413. Bodies are read whole before they go upstream.",
        transform: { try parseSize($0) }
    )
    var maxRequestBody = ByteCount(16_000_000)

    @Option(help: "Seconds a client may pause while sending a request body before it gets 408.")
    var requestBodyTimeout = 60

    @Option(
        help:
            "Seconds a client may take to send a request's head before the connection closes (nginx's client_header_timeout)."
    )
    var clientHeaderTimeout = 60

    @Option(help: "Seconds an idle keep-alive connection stays open (nginx's keepalive_timeout).")
    var keepaliveTimeout = 75

    @Option(help: "Seconds a client may leave its response unread before the connection closes (nginx's send_timeout).")
    var sendTimeout = 60

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    @Flag(help: "Add Stowage-Cache-Trace to every response: why it was (not) cached, served or validated.")
    var trace = false

    @Option(
        name: .customLong("targeted-cache-control"),
        help: ArgumentHelp(
            "A targeted cache-control field (RFC 9213) to follow instead of Cache-Control; repeat for several, first wins.",
            discussion: "Default: CDN-Cache-Control. Give 'none' to follow Cache-Control only.",
            valueName: "FIELD"
        )
    )
    var targetedCacheControl: [String] = []

    @Option(
        help: ArgumentHelp(
            "Lifetime by status for responses without explicit freshness, e.g. 200,301=10m; repeatable.",
            discussion: "nginx's proxy_cache_valid. Durations: seconds, or a number with s, m, h or d.",
            valueName: "STATUSES=DURATION"
        )
    )
    var cacheValid: [String] = []

    @Option(
        help: ArgumentHelp(
            "A query parameter left out of cache keys (a prefix with a trailing *, e.g. utm_*); repeatable.",
            valueName: "NAME"
        )
    )
    var cacheKeyIgnoreQuery: [String] = []

    @Option(
        help: ArgumentHelp(
            "Take purge and ban requests on HOST:PORT (POST /purge?url=, /ban?prefix=, /ban?tag=) and serve the status page (GET /, /status.json).",
            valueName: "HOST:PORT"
        )
    )
    var adminListen: String?

    @Option(
        help: ArgumentHelp(
            "The token admin requests must give (Authorization: Bearer TOKEN); required off loopback. Default: $STOWAGE_ADMIN_TOKEN.",
            discussion:
                "The admin listener speaks plain HTTP: keep it on loopback or a private network, or put TLS in front. A browser opening the status page is asked for a user name (any) and a password (the token).",
            valueName: "TOKEN"
        )
    )
    var adminToken: String?

    @Option(help: "Requests a URL must have had before its response is stored (nginx's proxy_cache_min_uses).")
    var cacheMinUses = 1

    @Option(
        help: "The largest response body stored, e.g. 10MB (default: 5% of --disk-capacity).",
        transform: { try parseSize($0) }
    )
    var cacheMaxBody: ByteCount?

    @Option(
        help: ArgumentHelp(
            "What to do with a response that sets a cookie: no-store (default), strip (store it without Set-Cookie) or store.",
            discussion:
                "no-store is nginx's and Varnish's default; store replays the cookie to every client (RFC 9111 allows it).",
            valueName: "MODE"
        )
    )
    var cacheSetCookie = "no-store"

    @Flag(help: "Sort query parameters in cache keys, so their order does not split entries.")
    var cacheKeySortQuery = false

    @Option(
        help: ArgumentHelp(
            "A request header field whose value is part of cache keys (as if every response varied on it); repeatable.",
            valueName: "NAME"
        )
    )
    var cacheKeyHeader: [String] = []

    @Option(
        help: ArgumentHelp(
            "Requests that skip the cache lookup (still stored): header:NAME, cookie:NAME or path:/PREFIX; repeatable.",
            valueName: "RULE"
        )
    )
    var cacheBypass: [String] = []

    @Option(
        help: ArgumentHelp(
            "Serve a stored response up to DURATION stale when the upstream fails (error, timeout, 5xx), whatever it said.",
            valueName: "DURATION"
        )
    )
    var staleIfError: String?

    @Option(
        help: ArgumentHelp(
            "Serve a stored response up to DURATION stale while it is refreshed in the background.",
            valueName: "DURATION"
        )
    )
    var staleWhileUpdating: String?

    @Option(help: "A Redis URL whose server this proxy shares its cache through, e.g. redis://127.0.0.1:6379.")
    var shared: String?

    @Option(help: "PEM file of the CAs to trust for a rediss:// --shared server (default: the system's).")
    var sharedCaFile: String?

    @Flag(
        help: """
            Exit (status 2) when the --shared Redis cannot be reached at start, instead of starting with the \
            proxy's own cache and connecting in the background.
            """
    )
    var sharedRequired = false

    @Option(
        help: ArgumentHelp(
            "Longest the proxy waits for the --shared Redis per call (default 0.5s); a Redis that does not answer "
                + "in time is skipped until a background probe gets an answer.",
            valueName: "DURATION"
        )
    )
    var sharedBudget: String?

    /// Checks every option before the proxy starts (exit 64 with a message). Not `validate()`:
    /// ArgumentParser validates a parent command for its subcommands too, and `stowage proxy
    /// purge` needs no `--upstream`.
    func checkOptions() throws {
        guard let upstream else {
            throw ValidationError(
                "give the upstream origin: --upstream http://HOST:PORT (or \"upstream\" in the --config file)"
            )
        }
        do {
            _ = try ProxyConfiguration.parseListenAddress(listen)
            _ = try ProxyConfiguration.Upstream(parsing: upstream)
        } catch let error as StowageError {
            throw ValidationError(error.message)
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        try checkTimeout(upstreamTimeout, option: "--upstream-timeout")
        try checkTimeout(requestBodyTimeout, option: "--request-body-timeout")
        try checkTimeout(clientHeaderTimeout, option: "--client-header-timeout")
        try checkTimeout(keepaliveTimeout, option: "--keepalive-timeout")
        try checkTimeout(sendTimeout, option: "--send-timeout")
        if let cacheDir { try GlobalOptions.checkPath(cacheDir, "--cache-dir") }
        guard diskCapacity.rawValue > 0 else { throw ValidationError("--disk-capacity must be more than 0 bytes") }
        _ = try targetedFields()
        _ = try defaultLifetimes()
        _ = try bypassRules()
        _ = try keyHeaders()
        if let listener = try adminListener() {
            do { try listener.validate() } catch let error as StowageError { throw ValidationError(error.message) }
        }
        _ = try setCookieHandling()
        guard cacheMinUses >= 1 else { throw ValidationError("--cache-min-uses must be 1 or more") }
        if let cacheMaxBody, cacheMaxBody.rawValue <= 0 {
            throw ValidationError("--cache-max-body must be more than 0 bytes")
        }
        if let bad = cacheKeyIgnoreQuery.first(where: {
            $0.isEmpty || $0 == "*" || $0.contains(where: { "&=?#".contains($0) })
        }) {
            throw ValidationError(
                "--cache-key-ignore-query \(bad.debugDescription) is not a query parameter name or NAME* prefix"
            )
        }
        if let staleIfError { _ = try parseDuration(staleIfError, option: "--stale-if-error") }
        if let staleWhileUpdating { _ = try parseDuration(staleWhileUpdating, option: "--stale-while-updating") }
        if sharedCaFile != nil, shared?.lowercased().hasPrefix("rediss://") != true {
            throw ValidationError("--shared-ca-file is for a TLS server: give --shared rediss://HOST:PORT as well")
        }
        if let shared {
            do {
                _ = try RedisConfiguration(url: shared)
            } catch let error as RedisError {
                throw ValidationError(
                    "--shared \(shared.debugDescription) is not a Redis URL (\(error.message)); give "
                        + "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], or rediss://… for TLS"
                )
            }
        } else if sharedRequired || sharedBudget != nil {
            throw ValidationError("--shared-required and --shared-budget need --shared redis://HOST:PORT")
        }
        _ = try sharedTierOptions()
    }

    /// The shared tier's options from `--shared-budget`, checked.
    func sharedTierOptions() throws -> RedisSharedTier.Options {
        var options = RedisSharedTier.Options()
        if let sharedBudget {
            options.requestBudget = try parseDuration(sharedBudget, option: "--shared-budget")
            do {
                try options.validate()
            } catch let error as StowageError {
                throw ValidationError("--shared-budget \(sharedBudget.debugDescription): \(error.message)")
            }
        }
        return options
    }

    /// `--admin-listen` and its token (the option, else `$STOWAGE_ADMIN_TOKEN`).
    func adminListener() throws -> ProxyConfiguration.AdminListener? {
        guard let adminListen else { return nil }
        let (host, port): (String, Int)
        do {
            (host, port) = try ProxyConfiguration.parseListenAddress(adminListen)
        } catch let error as StowageError {
            throw ValidationError("--admin-listen: \(error.message)")
        }
        let token = adminToken ?? ProcessInfo.processInfo.environment["STOWAGE_ADMIN_TOKEN"]
        return ProxyConfiguration.AdminListener(host: host, port: port, token: token)
    }

    /// `--cache-set-cookie`, checked.
    func setCookieHandling() throws -> SetCookieHandling {
        switch cacheSetCookie {
        case "no-store": return .doNotStore
        case "strip": return .storeWithoutCookie
        case "store": return .store
        default:
            throw ValidationError(
                "--cache-set-cookie \(cacheSetCookie.debugDescription) is not a mode; give no-store, strip or store"
            )
        }
    }

    /// The fields of every `--cache-key-header`, checked.
    func keyHeaders() throws -> [HTTPField.Name] {
        try cacheKeyHeader.map { name in
            guard let field = HTTPField.Name(name) else {
                throw ValidationError(
                    "--cache-key-header \(name.debugDescription) is not a header field name; give a token such as X-Tenant"
                )
            }
            return field
        }
    }

    /// The rules of every `--cache-bypass`, checked.
    func bypassRules() throws -> [CacheBypassRule] {
        try cacheBypass.map { text in
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            switch (parts.first, parts.count == 2 ? parts[1] : nil) {
            case ("header", let name?):
                if let field = HTTPField.Name(name) { return .header(field) }
            case ("cookie", let name?) where !name.isEmpty && !name.contains(where: { " ;=,".contains($0) }):
                return .cookie(name)
            case ("path", let prefix?) where prefix.hasPrefix("/"):
                return .pathPrefix(prefix)
            default:
                break
            }
            throw ValidationError(
                "--cache-bypass \(text.debugDescription) is not a rule; give header:NAME, cookie:NAME or path:/PREFIX"
            )
        }
    }

    /// The lifetimes of every `--cache-valid`, later ones winning for a status given twice.
    func defaultLifetimes() throws -> [Int: Duration] {
        try cacheValid.reduce(into: [:]) { lifetimes, text in
            lifetimes.merge(try parseStatusLifetimes(text)) { _, later in later }
        }
    }

    /// The field names of `--targeted-cache-control`, checked: `CDN-Cache-Control` when none is
    /// given, none for `none`.
    func targetedFields() throws -> [HTTPField.Name] {
        if targetedCacheControl.isEmpty { return [CacheRules.cdnCacheControl] }
        if targetedCacheControl == ["none"] { return [] }
        return try targetedCacheControl.map { name in
            guard name != "none", let field = HTTPField.Name(name) else {
                throw ValidationError(
                    "--targeted-cache-control \(name.debugDescription) is not a header field name; give a token such as "
                        + "CDN-Cache-Control, or 'none' alone"
                )
            }
            if field == .cacheControl {
                throw ValidationError(
                    "--targeted-cache-control names a field to follow instead of Cache-Control, not Cache-Control itself"
                )
            }
            return field
        }
    }

    func run() async throws {
        try checkOptions()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        try await Output.run {
            let (host, port) = try ProxyConfiguration.parseListenAddress(listen)
            let directory: URL
            if let cacheDir {
                directory = URL(filePath: cacheDir, directoryHint: .isDirectory)
            } else {
                directory = try await options.container().directory(for: .caches).appending(
                    path: "proxy",
                    directoryHint: .isDirectory
                )
            }
            var configuration = ProxyConfiguration(
                upstream: try ProxyConfiguration.Upstream(parsing: upstream ?? ""),
                cacheDirectory: directory,
                host: host,
                port: port
            )
            configuration.cache.memoryCapacity = memoryCapacity
            configuration.cache.diskCapacity = diskCapacity
            configuration.upstreamTimeout = .seconds(upstreamTimeout)
            configuration.sendsTrace = trace
            configuration.cache.rules.targetedFields = try targetedFields()
            configuration.cache.rules.defaultLifetimes = try defaultLifetimes()
            configuration.cache.rules.keyRules = CacheKeyRules(
                ignoredQueryParameters: cacheKeyIgnoreQuery,
                sortsQueryParameters: cacheKeySortQuery,
                headers: try keyHeaders()
            )
            configuration.cache.bypass = try bypassRules()
            configuration.cache.rules.setCookie = try setCookieHandling()
            configuration.cache.minimumUses = cacheMinUses
            configuration.admin = try adminListener()
            if configuration.admin != nil {
                // The admin listener serves every swift-metrics counter of this process.
                let registry = PrometheusCollectorRegistry()
                MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
                configuration.metricsRegistry = registry
            }
            configuration.cache.maximumBodySize = cacheMaxBody
            configuration.cache.rules.staleIfErrorGrace = try staleIfError.map {
                try parseDuration($0, option: "--stale-if-error")
            }
            configuration.cache.rules.staleWhileUpdatingGrace = try staleWhileUpdating.map {
                try parseDuration($0, option: "--stale-while-updating")
            }
            configuration.maximumRequestBodySize = maxRequestBody
            configuration.requestBodyIdleTimeout = .seconds(requestBodyTimeout)
            configuration.requestHeadTimeout = .seconds(clientHeaderTimeout)
            configuration.keepAliveTimeout = .seconds(keepaliveTimeout)
            configuration.sendTimeout = .seconds(sendTimeout)
            var logger = Logger(label: "org.stowage.proxy")
            logger.logLevel = level
            configuration.logger = logger
            configuration.cache.logger = Logger(label: "org.stowage.http-cache")
            configuration.cache.logger.logLevel = level
            var tier: RedisSharedTier?
            if let shared {
                let connected = try await connectShared(url: shared, logger: logger)
                configuration.cache.sharedTier = connected
                tier = connected
            }
            let proxy = try CachingProxy(configuration: configuration)
            // Scripts wait for "listening on": it is printed once every listener is bound, so
            // a proxy whose admin address is taken never claims to have started.
            let announcement = ListeningAnnouncement(
                host: host,
                adminHost: configuration.admin?.host
            )
            do {
                try await proxy.run(
                    handlingSignals: true,
                    onListening: { port in announcement.bound(main: port) },
                    onAdminListening: { port in announcement.bound(admin: port) }
                )
            } catch let error as StowageError {
                await tier?.shutdown()
                throw error
            } catch {
                await tier?.shutdown()
                // A listener that cannot bind (the address is in use, not this machine's) or
                // another failure to serve: the operation failed (exit 2), not "done with errors".
                throw StowageError(
                    code: .unreachable,
                    message: "the proxy could not serve on \(listen)\(adminListen.map { " and \($0)" } ?? ""): "
                        + "\(error); free the address or choose another with --listen/--admin-listen",
                    cause: error
                )
            }
            await tier?.shutdown()
        }
    }
}

extension ProxyCommand {
    /// Whether Redis refused the connection for a reason that waiting will not change: wrong
    /// credentials, a certificate it or we reject, a database that does not exist.
    static func isConfigurationError(_ error: RedisError) -> Bool {
        if error.code == .authentication || error.code == .tls || error.code == .invalidURL { return true }
        let message = error.message.uppercased()
        return error.code == .server
            && (message.contains("NOAUTH") || message.contains("WRONGPASS") || message.contains("DB INDEX"))
    }

    /// The shared tier on `url`. A Redis that refuses the proxy's credentials, certificate or
    /// database is a failure (exit 2). One that cannot be reached, does not answer, is busy or
    /// answers nonsense is a failure with `--shared-required`; otherwise the proxy starts with
    /// its own cache and the tier connects in the background (its circuit breaker skips Redis
    /// until a probe gets an answer).
    func connectShared(url: String, logger: Logger) async throws -> RedisSharedTier {
        let options = try sharedTierOptions()
        var configuration = try RedisConfiguration(url: url)
        configuration.logger = logger
        if let sharedCaFile { try configuration.trustCertificateAuthorities(pemFile: sharedCaFile) }
        let base = configuration
        do {
            let connected = try await RedisSharedTier.connect(url: url, namespace: "stowage-http", options: options) {
                $0 = base
            }
            // Invalidations from the other proxies must not be missed from the start.
            _ = await connected.waitUntilSubscribed()
            return connected
        } catch let error as RedisError where Self.isConfigurationError(error) {
            // Wrong credentials, certificates or database: waiting will not help.
            throw StowageError(
                code: .refused,
                message: "the --shared Redis at \(configuration.address) refused the proxy (\(error.message)); check "
                    + "the URL's user, password and database, and --shared-ca-file",
                cause: error
            )
        } catch let error as RedisError {
            // Unreachable, silent, busy (maxclients, LOADING) or answering nonsense: Redis may
            // come back, so the proxy starts on its own cache unless told to require it.
            if sharedRequired {
                throw StowageError(
                    code: .unreachable,
                    message: "cannot reach the --shared Redis at \(configuration.address) (\(error.message)); start "
                        + "it, or leave out --shared-required to start with the proxy's own cache and connect "
                        + "in the background",
                    cause: error
                )
            }
            logger.warning(
                "the shared Redis cannot be reached; serving from this proxy's own cache and connecting in the background",
                metadata: ["redis": "\(configuration.address)", "error": "\(error)"]
            )
            // Not knowing whether it is a cluster, the proxy treats it as one server.
            return try RedisSharedTier(
                client: RedisClient(configuration: configuration),
                namespace: "stowage-http",
                options: options,
                logger: logger
            )
        }
    }
}
