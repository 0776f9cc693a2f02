import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import StowageCore
import StowageHTTPCache
import StowageHTTPClient
import StowageLoopClock
import Synchronization
import UnixSignals

/// A caching reverse proxy: a shared RFC 9111 cache in front of one origin, on Hummingbird,
/// forwarding to an `http://` upstream with its own HTTP/1.1 client on SwiftNIO (kept-alive
/// connections per origin, interim responses passed on) and to an `https://` one with
/// AsyncHTTPClient.
///
/// ```swift
/// let proxy = try CachingProxy(configuration: .init(
///     upstream: try .init(parsing: "http://127.0.0.1:8000"),
///     cacheDirectory: URL(filePath: "/var/cache/stowage-proxy")))
/// try await proxy.run()                     // until SIGINT or SIGTERM
/// ```
///
/// It keeps connections alive, streams bodies both ways, adds `Age` and `Cache-Status`
/// (RFC 9211), collapses concurrent requests for one uncached URL into one upstream fetch,
/// answers 502 when the upstream fails and 504 when it times out (or a stale response when
/// `stale-if-error` allows), and 400 to requests that do not parse. It forwards an `http://`
/// upstream's interim responses (`100 Continue`, `103 Early Hints`) to HTTP/1.1 clients and
/// never stores them (RFC 9110 §15.2).
public final class CachingProxy: Sendable {
    /// The configuration.
    public let configuration: ProxyConfiguration
    /// The shared cache.
    public let cache: HTTPCache
    let transport: UpstreamTransport
    /// The client for an `http://` upstream (``UpstreamClient``); `nil` for `https://`.
    let client: UpstreamClient?
    let handler: ProxyHandler
    let metrics: ProxyMetrics
    /// The working memory of the requests in flight, charged to the cache's memory capacity: the
    /// server counts a request until its response is written, ``WorkingMemoryWindows`` ends its
    /// windows.
    let workingMemory: WorkingMemoryCharge
    /// This proxy's claim on its cache directory (``CacheDirectoryClaim``): taken when the proxy
    /// is made, given up when `run` has closed the cache (or with the proxy, if it never runs).
    private let directoryClaim: Mutex<LockFile?>

    /// Opens the cache and prepares the upstream client; nothing listens until `run(handlingSignals:onListening:)`.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` for a timeout out of range or a private
    ///   cache (``ProxyConfiguration/validate()``); `.busy` when another proxy serves from the
    ///   same cache directory (one proxy per directory: a purge through one would not reach what
    ///   the other keeps in memory); and what `HTTPCache` throws for the rest of
    ///   ``ProxyConfiguration/cache`` or when its directory cannot be opened.
    public init(configuration: ProxyConfiguration) throws {
        try configuration.validate()
        self.configuration = configuration
        directoryClaim = Mutex(try CacheDirectoryClaim.claim(configuration.cacheDirectory))
        var cacheConfiguration = configuration.cache
        if cacheConfiguration.tracer == nil { cacheConfiguration.tracer = configuration.tracer }
        cache = try HTTPCache(directory: configuration.cacheDirectory, configuration: cacheConfiguration)
        transport = UpstreamTransport(
            client: UpstreamTransport.makeClient(readTimeout: configuration.upstreamTimeout),
            timeout: configuration.upstreamTimeout,
            timeoutClock: configuration.timeoutClock
        )
        if configuration.upstream.scheme == "http" {
            var upstream = UpstreamClient.Configuration()
            upstream.readTimeout = configuration.upstreamTimeout
            upstream.timeout = configuration.upstreamTimeout
            upstream.clock = LoopClock(configuration.timeoutClock)
            client = UpstreamClient(configuration: upstream)
        } else {
            client = nil
        }
        metrics = ProxyMetrics()
        handler = ProxyHandler(
            configuration: configuration,
            cache: cache,
            transport: transport,
            client: client,
            metrics: metrics
        )
        workingMemory = WorkingMemoryCharge(cache: cache, clock: configuration.timeoutClock)
    }

    /// Serves until cancelled or, with `handlingSignals`, until SIGINT or SIGTERM; then stops
    /// accepting, lets requests in flight finish, and closes the upstream client.
    ///
    /// - Parameters:
    ///   - handlingSignals: Whether SIGINT and SIGTERM shut the proxy down gracefully. Default `true`.
    ///   - onListening: Called with the bound port once the proxy accepts connections.
    ///   - onAdminListening: Called with the admin listener's port once it accepts connections.
    public func run(
        handlingSignals: Bool = true,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in },
        onAdminListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let logger = configuration.logger
        try configuration.admin?.validate()
        let handler = self.handler
        let server = ProxyServer(
            respond: { await handler.respond(to: $0, interims: $1) },
            hitResponder: LoopHitResponder(handler: handler),
            workingMemory: workingMemory,
            configuration: ServerConfiguration(address: .hostname(configuration.host, port: configuration.port)),
            headTimeout: configuration.requestHeadTimeout,
            keepAliveTimeout: configuration.keepAliveTimeout,
            sendTimeout: configuration.sendTimeout,
            timeoutClock: LoopClock(configuration.timeoutClock),
            dateClock: configuration.cache.clock,
            logger: logger,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info(
                    "stowage proxy listening",
                    metadata: [
                        "address": "\(channel.localAddress.map { "\($0)" } ?? "?")",
                        "upstream": "\(self.configuration.upstream)",
                    ]
                )
                await onListening(port)
            }
        )
        // The cache applies other nodes' invalidations while the proxy serves; it is closed
        // after the group, once the listeners have drained (a graceful shutdown stops the
        // services in reverse order, so the cache's own run would close it under them).
        var services: [any Service] = [
            server, CacheInvalidations(cache: cache), WorkingMemoryWindows(charge: workingMemory),
        ]
        if let admin = configuration.admin {
            let adminHandler = AdminHandler(
                cache: cache,
                token: admin.token,
                registry: configuration.metricsRegistry,
                metrics: metrics,
                upstream: "\(configuration.upstream)"
            )
            services.append(StatusSampler(counters: metrics.activity.counters, rate: metrics.activity.rate))
            services.append(
                ProxyServer(
                    respond: { request, _ in await adminHandler.respond(to: request) },
                    configuration: ServerConfiguration(address: .hostname(admin.host, port: admin.port)),
                    headTimeout: configuration.requestHeadTimeout,
                    keepAliveTimeout: configuration.keepAliveTimeout,
                    sendTimeout: configuration.sendTimeout,
                    timeoutClock: LoopClock(configuration.timeoutClock),
                    dateClock: configuration.cache.clock,
                    logger: logger,
                    onServerRunning: { channel in
                        let port = channel.localAddress?.port ?? 0
                        logger.info(
                            "stowage proxy admin listening",
                            metadata: ["address": "\(channel.localAddress.map { "\($0)" } ?? "?")"]
                        )
                        await onAdminListening(port)
                    }
                )
            )
        }
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint] : [],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            try? await cache.close()
            releaseDirectoryClaim()
            client?.shutdown()
            try? await transport.client.shutdown()
            throw error
        }
        logger.info("stowage proxy stopped")
        do {
            try await cache.close()
        } catch {
            logger.error("closing the proxy's cache: \(error)")
        }
        releaseDirectoryClaim()
        client?.shutdown()
        try await transport.client.shutdown()
    }
}

extension CachingProxy {
    /// Gives up the claim on the cache directory, once the cache is closed: another proxy may
    /// serve from it now (a restart over the same directory in this process included).
    private func releaseDirectoryClaim() {
        directoryClaim.withLock { $0 = nil }
    }
}
