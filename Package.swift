// swift-tools-version: 6.2
import PackageDescription

// Settings every Stowage target shares. Warnings are errors for our own targets only:
// SwiftPM drops warning-control settings of dependencies, so users of the package are never
// broken by a new compiler's warning.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

// Linux: built and tested. Apple platforms: written against the platform APIs but not compiled
// here (see the README's "Platforms"). watchOS is left out: the StowageProxy product needs
// Hummingbird, whose Package.swift declares no watchOS platform, and a server's listening socket
// is low-level networking, which watchOS allows only to audio-streaming apps (Apple's TN3135).
// macOS 15 / iOS 18 / tvOS 18 / visionOS 2: `Mutex` from Synchronization.
let package = Package(
    name: "Stowage",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .library(name: "Stowage", targets: ["Stowage"]),
        .library(name: "StowageCore", targets: ["StowageCore"]),
        .library(name: "StowageCache", targets: ["StowageCache"]),
        .library(name: "StowageHousekeeping", targets: ["StowageHousekeeping"]),
        .library(name: "StowagePreferences", targets: ["StowagePreferences"]),
        .library(name: "StowageDatabase", targets: ["StowageDatabase"]),
        .library(name: "StowageSecrets", targets: ["StowageSecrets"]),
        .library(name: "StowageCookies", targets: ["StowageCookies"]),
        .library(name: "StowageStores", targets: ["StowageStores"]),
        .library(name: "StowageHTTPCache", targets: ["StowageHTTPCache"]),
        .library(name: "StowageHTTPClient", targets: ["StowageHTTPClient"]),
        .library(name: "StowageProxy", targets: ["StowageProxy"]),
        .library(name: "StowageHummingbird", targets: ["StowageHummingbird"]),
        .library(name: "StowageRedis", targets: ["StowageRedis"]),
        .library(name: "StowageSharedTier", targets: ["StowageSharedTier"]),
        .library(name: "StowageTesting", targets: ["StowageTesting"]),
        .executable(name: "stowage", targets: ["StowageCLI"]),
        .executable(name: "stowage-bench", targets: ["StowageBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // NIOHTTPTypesHTTP1: the proxy's own HTTP/1 pipeline (already in the graph through Hummingbird).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // `swift package generate-documentation`: the DocC catalogs, built in CI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Spans of cache misses, HTTP cache decisions, Redis round trips and housekeeping runs
        // (already in the graph through Hummingbird and AsyncHTTPClient).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.6.0"),
    ],
    targets: [
        // container, locations, marks, disk usage, capacity, sizes, clearing.
        .target(
            name: "StowageCore",
            dependencies: ["CStowageShims"],
            swiftSettings: swiftSettings
        ),
        // Tiny C shim for what Glibc's module map does not show Swift (xattr, statx).
        .target(name: "CStowageShims"),
        // glibc's malloc tuning for `stowage proxy` (malloc.h).
        .target(name: "CStowageMalloc"),
        // The clock event-loop deadlines run on: NIO's timers, or a test clock that fires them.
        // Apart from StowageCore so the core stays free of NIO.
        .target(
            name: "StowageLoopClock",
            dependencies: ["StowageCore", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        // memory, disk and hybrid caches. GRDB holds the disk cache's index.
        .target(
            name: "StowageCache",
            dependencies: [
                "StowageCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, which GRDB links, for the disk cache's prepared hot read.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                // `Service` for the memory-pressure source and the hybrid cache.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // purgeable directories, the cleaner and the storage monitor. No GRDB: caches join
        // the monitor through StowageCore's `Purging`.
        .target(
            name: "StowageHousekeeping",
            dependencies: [
                "StowageCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // typed preferences (an append-only, checksummed log) and Codable archives. No heavy deps.
        .target(
            name: "StowagePreferences",
            dependencies: [
                "StowageCore", "CStowageShims",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // one GRDB database per user.
        .target(
            name: "StowageDatabase",
            dependencies: [
                "StowageCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // the encrypted secret store (swift-crypto: AES-GCM, scrypt).
        .target(
            name: "StowageSecrets",
            dependencies: [
                "StowageCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // the RFC 6265 cookie store (Library/Cookies) for the client. Core only, so the client
        // and the stores can both use it without pulling in each other's dependencies.
        .target(
            name: "StowageCookies",
            dependencies: ["StowageCore"],
            swiftSettings: swiftSettings
        ),
        // Across every store: the storage account, clearing every cache, per-user spaces.
        .target(
            name: "StowageStores",
            dependencies: [
                "StowageCore", "StowageCache", "StowageHousekeeping", "StowagePreferences", "StowageDatabase",
                "StowageSecrets", "StowageCookies",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // RFC 9111 decisions (pure, over swift-http-types) and response storage on StowageCache.
        // No NIO or AsyncHTTPClient here, so its conformance tests build in seconds.
        .target(
            name: "StowageHTTPCache",
            dependencies: [
                "StowageCore", "StowageCache",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                // `Service`: the cache applies other nodes' invalidations while it runs.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // the caching client on AsyncHTTPClient.
        .target(
            name: "StowageHTTPClient",
            dependencies: [
                "StowageCore",
                "StowageHTTPCache",
                "StowageCookies",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // CachingHTTPClient is a Service: run() owns the AsyncHTTPClient it created.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // the caching reverse proxy (a shared cache) on Hummingbird, upstream through the client.
        .target(
            name: "StowageProxy",
            dependencies: [
                "StowageCore", "StowageHTTPCache", "StowageHTTPClient", "StowageCache", "StowageLoopClock",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Response-cache middleware for Hummingbird apps: HTTPCache in front of the app's own
        // handlers. Its own module, so neither the core nor the cache pulls in Hummingbird.
        .target(
            name: "StowageHummingbird",
            dependencies: [
                "StowageCore", "StowageHTTPCache",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The shared tier, part 1: a RESP3/RESP2 Redis client on SwiftNIO (standalone and Cluster,
        // pool, pub/sub, TLS). Knows nothing of caches, so it stays usable on its own.
        .target(
            name: "StowageRedis",
            dependencies: [
                "StowageLoopClock",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The shared tier, part 2: StowageCache's SharedCacheTier on Redis. The only module that
        // sees both the cache (GRDB) and the client (NIO), so neither pulls in the other.
        .target(
            name: "StowageSharedTier",
            dependencies: [
                "StowageCore", "StowageCache", "StowageRedis",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Umbrella: re-exports the light modules.
        .target(
            name: "Stowage",
            dependencies: [
                "StowageCore", "StowageCache", "StowageHousekeeping", "StowagePreferences", "StowageCookies",
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "StowageCLI",
            dependencies: [
                "StowageCore", "StowageCache", "StowageHousekeeping", "StowagePreferences", "StowageDatabase",
                "StowageSecrets", "StowageStores", "StowageProxy", "StowageSharedTier", "StowageRedis",
                "StowageHTTPCache", "CStowageMalloc",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // The NIO floor for Benchmarks/proxy-load.sh: captured responses answered from memory
        // through NIO's HTTP/1 codec, nothing else. Not a product: the load script builds it.
        .executableTarget(
            name: "StowageHTTPFloor",
            dependencies: [
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // The application Benchmarks/middleware-load.sh loads: one route cached by
        // StowageHummingbird's middleware and the same route bare. Not a product.
        .executableTarget(
            name: "StowageMiddlewareBench",
            dependencies: [
                "StowageHTTPCache", "StowageHummingbird",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "StowageBench",
            dependencies: [
                "StowageCore",
                "StowageCache",
                "StowageHousekeeping",
                "StowagePreferences",
                "StowageStores",
                "StowageHTTPCache",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "StowageRedis",
                "StowageSharedTier",
                // ChildProcess and the redis-server launcher, shared with the tests: du,
                // redis-benchmark and redis-server start as the tests' children do.
                "StowageProcessSupport",
                "CStowageBenchShims",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `tracing.noop-span`: what a span costs a path below memory with no tracer.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // For users' tests and Stowage's own: manual and stepped clocks, temporary directories,
        // and an in-memory shared level with outages, lost invalidations and slow calls.
        .target(
            name: "StowageTesting",
            dependencies: ["StowageCore", "StowageCache"],
            swiftSettings: swiftSettings
        ),
        // Child processes for the tests and the bench: ChildProcess (posix_spawn, in place of
        // Foundation's Process), a free loopback port, a redis-server on it. Not a product, and
        // Foundation only, so the core's tests stay light.
        .target(
            name: "StowageProcessSupport",
            dependencies: ["CStowageSpawn"],
            swiftSettings: swiftSettings
        ),
        // posix_spawn's close-from and chdir actions, which Glibc's module map hides from Swift:
        // ChildProcess needs them.
        .target(name: "CStowageSpawn"),
        // glibc's mallinfo2(), for the bench's bytes-per-entry figures (Glibc's module map
        // leaves malloc.h out).
        .target(name: "CStowageBenchShims"),
        // What every test target shares: StowageTesting (re-exported), eventually, child
        // commands (re-exported from StowageProcessSupport), the tests' own failure type.
        .target(
            name: "StowageTestSupport",
            dependencies: ["StowageCore", "StowageCache", "StowageProcessSupport", "StowageTesting"],
            path: "Tests/StowageTestSupport",
            swiftSettings: swiftSettings
        ),
        // The one child process of the test suites, with a subcommand per suite that needs
        // another process: killed mid-write, sharing a directory, a second shared-tier node.
        .executableTarget(
            name: "StowageTestWorker",
            dependencies: [
                "StowageCore", "StowageCache", "StowagePreferences", "StowageStores", "StowageSharedTier",
                "StowageRedis", "StowageHTTPCache", "StowageCookies", "StowageHousekeeping", "StowageTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/StowageTestWorker",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageCoreTests",
            dependencies: ["StowageCore", "StowageTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageCacheTests",
            dependencies: [
                "StowageTestWorker",
                "StowageCore", "StowageCache", "StowageHousekeeping", "StowageTestSupport", "StowageTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageHousekeepingTests",
            dependencies: [
                "StowageHousekeeping", "StowageCore", "StowageTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowagePreferencesTests",
            dependencies: ["StowageTestWorker", "StowagePreferences", "StowageCore", "StowageTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageCookiesTests",
            dependencies: ["StowageTestWorker", "StowageCookies", "StowageCore", "StowageTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageDatabaseTests",
            dependencies: [
                "StowageDatabase", "StowageCore", "StowageTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageSecretsTests",
            dependencies: [
                "StowageSecrets", "StowageCore", "StowageTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageStoresTests",
            dependencies: [
                "StowageTestWorker",
                "StowageStores", "StowageCore", "StowageCache", "StowageHousekeeping", "StowagePreferences",
                "StowageDatabase", "StowageTestSupport",
                "StowageSecrets",
                "StowageHTTPCache",
                "StowageCookies",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The RFC 9111 conformance suite for the pure logic and the storage: no NIO.
        .testTarget(
            name: "StowageHTTPCacheTests",
            dependencies: [
                "StowageTestWorker",
                "StowageHTTPCache", "StowageCache", "StowageCore", "StowageTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // A scripted origin server on 127.0.0.1 for the client and proxy tests.
        .target(
            name: "StowageHTTPTestSupport",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/StowageHTTPTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageHTTPClientTests",
            dependencies: [
                "StowageHTTPClient", "StowageHTTPCache", "StowageHTTPTestSupport", "StowageCore",
                "StowageCookies", "StowageTestSupport", .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageProxyTests",
            dependencies: [
                "StowageProxy", "StowageHTTPCache", "StowageHTTPClient", "StowageHTTPTestSupport", "StowageCore",
                "StowageSharedTier", "StowageRedis", "StowageRedisTestSupport", "StowageCache",
                "StowageTestSupport", "StowageTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // Starts and stops real redis-server processes (standalone and a 3-master cluster) on
        // free loopback ports in temporary directories, for the Redis and shared-tier tests.
        .target(
            name: "StowageRedisTestSupport",
            dependencies: ["StowageRedis", "StowageProcessSupport", "StowageTestSupport"],
            path: "Tests/StowageRedisTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageRedisTests",
            dependencies: [
                "StowageRedis", "StowageRedisTestSupport", "StowageTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageSharedTierTests",
            dependencies: [
                "StowageTestWorker",
                "StowageCore", "StowageCache", "StowageSharedTier", "StowageRedis", "StowageRedisTestSupport",
                "StowageTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageHummingbirdTests",
            dependencies: [
                "StowageHummingbird", "StowageHTTPCache", "StowageCore", "StowageTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageCLITests",
            dependencies: [
                "StowageCore", "StowageCLI", "StowageHTTPTestSupport", "StowageRedisTestSupport", "StowageTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The help screens, rendered at fixed widths (helpMessage(for:columns:)).
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
