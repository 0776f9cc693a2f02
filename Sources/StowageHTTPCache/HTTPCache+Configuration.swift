import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore
import Tracing

extension HTTPCache {
    /// How an ``HTTPCache`` behaves; every property has a documented default.
    public struct Configuration: Sendable {
        /// A name for logs, metrics and the `Cache-Status` field. Default `"stowage"`.
        public var name: String
        /// The RFC 9111 rules the cache applies: private or shared (``CacheRules/kind``),
        /// heuristic freshness, RFC 9213 targeted fields, operator lifetimes by status, stale
        /// graces, key rules and what a shared cache does with `Set-Cookie`; see ``CacheRules``.
        /// Default `CacheRules(kind:)` with the kind given to ``init(kind:name:)``. Validated when
        /// the cache opens: the durations must lie in 0…68 years (RFC 9111's largest
        /// delta-seconds), the statuses of ``CacheRules/defaultLifetimes`` be final (200–599).
        public var rules: CacheRules
        /// Bytes of responses kept in memory, in front of the disk. Default 2 MB (the usual `NSURLCache`
        /// set-up's `initWithMemoryCapacity:2 * 1024 * 1024`). 0 with no disk tier disables the cache
        /// (``HTTPCache/Mode/disabled``), as `URLCache(memoryCapacity: 0, diskCapacity: 0)`.
        public var memoryCapacity: ByteCount
        /// Bytes of responses kept on disk; least-recently-used responses go first when it is
        /// exceeded. Default 100 MB (`NSURLCache`'s `diskCapacity:100 * 1024 * 1024`). 0: no disk
        /// tier, memory only (``HTTPCache/Mode/memoryOnly``), as `URLCache`'s `diskCapacity: 0`;
        /// not used by a cache opened without a directory.
        public var diskCapacity: ByteCount
        /// The largest body stored, as a fraction of each tier's capacity: a body above
        /// `memoryCapacity × fraction` skips memory, one above `diskCapacity × fraction` is not
        /// stored at all. Default 0.05, the "about 5% of the cache size" URLSession documents.
        public var maximumEntryFraction: Double
        /// Bodies up to this size are buffered and written in one piece; larger ones stream to a
        /// file as they arrive. Default 64 KiB.
        public var streamingThreshold: Int
        /// Requests that skip the lookup and go to the origin (nginx's `proxy_cache_bypass`);
        /// their responses are still stored when storable. Default none.
        public var bypass: [CacheBypassRule]
        /// The largest body stored, whatever the capacities; `nil` (the default) for
        /// ``maximumEntryFraction`` alone. A body over it is forwarded, not stored.
        public var maximumBodySize: ByteCount?
        /// Requests a URL must have had (in this process) before its response is stored
        /// (nginx's `proxy_cache_min_uses`), so one-off URLs do not push out popular ones.
        /// Default 1: store at once.
        public var minimumUses: Int
        /// Response fields whose values tag a stored response for ``HTTPCache/invalidate(tag:)``
        /// (space- or comma-separated), e.g. `Surrogate-Key` and `Cache-Tag`. They are removed
        /// from what clients receive, as CDNs do. Default none (the proxy sets both).
        public var tagFields: [HTTPField.Name]
        /// Rules that force an expiry interval for chosen requests; the first match wins.
        /// Default none.
        public var forcedExpiry: [ForcedExpiry]
        /// Called before a response is stored; may change its fields, replace its body, attach
        /// user info, keep it in memory only, or refuse it (NSURLSession's `willCacheResponse`);
        /// see ``CacheProposal``. Default none.
        public var willCache: WillCacheHook?
        /// Whether concurrent requests for one uncached URL wait for a single origin fetch
        /// (request collapsing, nginx's `proxy_cache_lock`). Default `true`.
        public var collapsesRequests: Bool
        /// How long a collapsed request waits for the first one before fetching on its own.
        /// Default 5 s, nginx's `proxy_cache_lock_timeout`.
        public var collapseTimeout: Duration
        /// How many variants (`Vary`, RFC 9111 §4.1) of one URL are kept; storing one more drops
        /// the oldest. A client sending a new value of a field the origin varies on
        /// (`User-Agent`, `Accept-Language`) would otherwise grow the URL's variant list, read on
        /// every lookup and rewritten on every store, without bound. Default 32.
        public var maximumVariantsPerURL: Int
        /// Where time comes from; tests move it by hand. Default the system clock.
        public var clock: CacheClock
        /// What waits (the request collapser's ``collapseTimeout``) are measured by. Default
        /// `ContinuousClock()`; tests pass a clock they advance.
        public var waitClock: any Clock<Duration>
        /// Where the cache logs. Default: labelled `org.stowage.http-cache`, silent.
        public var logger: Logger
        /// A level shared with other nodes (e.g. `RedisSharedTier`): two proxies or clients with
        /// the same shared level serve each other's stored responses. `nil`: local only.
        ///
        /// Only a shared cache (``CacheRules/kind`` `.shared`) may have one. A private cache stores
        /// what one user may see (`Cache-Control: private`, answers to requests with
        /// `Authorization`, RFC 9111 §3.5 and §5.2.2.7); a level other nodes read would hand those
        /// to every user of every node, so opening a private cache with a shared tier throws
        /// `StowageError` `.invalidConfiguration`.
        public var sharedTier: (any SharedCacheTier)?
        /// The largest body put in the shared level; responses with larger bodies stay local
        /// (their records are not shared either). Default 1 MB.
        public var sharedBodyLimit: ByteCount
        /// How long records and bodies live in the shared level. Default one day.
        public var sharedTimeToLive: Duration
        /// How the cache works with ``sharedTier``, when it has one — the same options, with the
        /// same meaning, as `HybridCache.Configuration.sharedLevel`: invalidations of disk copies,
        /// the check of disk copies after missed invalidations, the changes kept during an outage
        /// (purges and bans among them) and the clock their replay waits on. A proxy sets them
        /// through its ``HTTPCache/Configuration``. Default: `SharedTierOptions`' defaults.
        public var sharedLevel: SharedTierOptions
        /// Where the spans of decisions that are not memory hits go, with the origin fetch and the
        /// store under them (see ``HTTPCacheTracing``). Default `nil`: the process's tracer,
        /// `InstrumentationSystem.tracer`, read once when the cache is made (a no-op tracer
        /// until the application bootstraps one: bootstrap it before making caches). Tests pass
        /// an `InMemoryTracer` here.
        public var tracer: (any Tracer)?

        /// A configuration with the defaults above.
        public init(kind: CacheKind = .private, name: String = "stowage") {
            self.name = name
            rules = CacheRules(kind: kind)
            memoryCapacity = ByteCount(2 * 1024 * 1024)
            diskCapacity = ByteCount(100 * 1024 * 1024)
            maximumEntryFraction = 0.05
            streamingThreshold = 64 * 1024
            maximumBodySize = nil
            tagFields = []
            minimumUses = 1
            bypass = []
            forcedExpiry = []
            willCache = nil
            collapsesRequests = true
            collapseTimeout = .seconds(5)
            maximumVariantsPerURL = 32
            clock = .system
            waitClock = ContinuousClock()
            logger = Logger(label: "org.stowage.http-cache", factory: SwiftLogNoOpLogHandler.init)
            sharedTier = nil
            sharedBodyLimit = ByteCount(1_000_000)
            sharedTimeToLive = .seconds(86_400)
            sharedLevel = SharedTierOptions()
            tracer = nil
        }

        func validate() throws {
            for (name, capacity) in [("memoryCapacity", memoryCapacity), ("diskCapacity", diskCapacity)]
            where capacity.rawValue < 0 {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "\(name) is \(capacity.rawValue) bytes; give 0 or more (0 turns that tier off, "
                        + "and both 0 disable the cache, as URLCache(memoryCapacity: 0, diskCapacity: 0))"
                )
            }
            guard maximumEntryFraction > 0, maximumEntryFraction <= 1 else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "maximumEntryFraction is \(maximumEntryFraction); it must be in (0, 1]"
                )
            }
            guard streamingThreshold > 0 else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "streamingThreshold is \(streamingThreshold); it must be more than 0 bytes"
                )
            }
            try rules.validate()
            if sharedTier != nil, rules.kind != .shared {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "a \(rules.kind) cache cannot have a sharedTier: it stores responses meant for one user "
                        + "(Cache-Control: private, answers to requests with Authorization), and other nodes would "
                        + "serve them to everyone; set rules.kind = .shared, or leave sharedTier nil"
                )
            }
            try CacheRules.checkDuration(sharedTimeToLive, named: "sharedTimeToLive")
            try sharedLevel.validate()
            guard collapseTimeout > .zero, collapseTimeout <= .seconds(86_400) else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "collapseTimeout is \(collapseTimeout); give a duration above 0 and at most one day"
                )
            }
            if let maximumBodySize, maximumBodySize.rawValue <= 0 {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "maximumBodySize must be more than 0 bytes, or nil"
                )
            }
            guard maximumVariantsPerURL >= 1 else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "maximumVariantsPerURL is \(maximumVariantsPerURL); it must be 1 or more"
                )
            }
            guard minimumUses >= 1 else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "minimumUses is \(minimumUses); it must be 1 or more"
                )
            }
        }
    }
}
