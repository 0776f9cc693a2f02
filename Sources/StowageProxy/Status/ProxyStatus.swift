import Foundation

/// The admin listener's `GET /status.json`: what an operator without Prometheus looks at, as
/// nginx's `stub_status` and `varnishstat` show theirs. Every field is documented in the
/// proxy's guide (`CachingProxyGuide.md`, "Status page"); names are camelCase and stable,
/// `version` changes if one ever has to change meaning.
struct ProxyStatus: Codable, Sendable, Hashable {
    /// The document's layout version, 1.
    var version = 1
    var generatedAt: Date
    var startedAt: Date
    var uptimeSeconds: Double
    var upstream: String
    var requests: Requests
    var hitRatio: HitRatio
    var bytesServed: BytesServed
    var cache: Cache
    var upstreamLatency: Latency?
    var sharedTier: SharedTier?
    var recentInvalidations: [Invalidation]

    struct Requests: Codable, Sendable, Hashable {
        var total: Int
        var perSecondSinceStart: Double
        var perSecondRecent: Double?
        var recentWindowSeconds: Double?
        var upstreamErrors: Int
        var byOutcome: ByOutcome
    }

    struct ByOutcome: Codable, Sendable, Hashable {
        var hit: Int
        var stale: Int
        var revalidated: Int
        var miss: Int
        var bypass: Int
    }

    struct HitRatio: Codable, Sendable, Hashable {
        var ratio: Double?
        var hits: Int
        var cacheableLookups: Int
    }

    struct BytesServed: Codable, Sendable, Hashable {
        var fromCache: Int
        var fromUpstream: Int
    }

    struct Cache: Codable, Sendable, Hashable {
        var memory: Level
        var disk: Level?
        /// The file answers read from the disk index are spilled to; `nil` until it is opened.
        var spill: Spill?
    }

    /// Answers worked out from disk reads and kept as the bytes to send in a file beside the
    /// disk cache, their places in memory (`HTTPCache+SpilledAnswers.swift`).
    struct Spill: Codable, Sendable, Hashable {
        /// Hits answered from the file since the proxy started.
        var hits: Int
        /// The bytes the file holds now (emptied by a clear, and when it fills up).
        var bytes: Int64
        /// The most it holds before it starts over: a quarter of the disk level's capacity.
        var capacityBytes: Int64
    }

    struct Level: Codable, Sendable, Hashable {
        var bytes: Int64
        var capacityBytes: Int64
        var entries: Int?
        /// Of the memory level's capacity, what is set aside for the working memory of the
        /// requests in flight (``WorkingMemoryCharge``); `nil` for the disk level.
        var setAsideBytes: Int64?
    }

    struct Latency: Codable, Sendable, Hashable {
        var samples: Int
        var windowSeconds: Double
        var meanMilliseconds: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var maxMilliseconds: Double
    }

    struct SharedTier: Codable, Sendable, Hashable {
        var healthy: Bool
        var outageSince: Date?
        var failures: Int
        var pendingWrites: Int
    }

    struct Invalidation: Codable, Sendable, Hashable {
        var time: Date
        var kind: String
        var target: String
        var removed: Int
    }

    /// The document as JSON: dates in ISO 8601, keys sorted, `/` left alone; an optional figure
    /// with no value is left out.
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
