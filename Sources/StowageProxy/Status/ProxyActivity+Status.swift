import Foundation
import StowageCore
import StowageHTTPCache

extension ProxyActivity {
    /// The window of ``ProxyStatus/Requests/perSecondRecent``.
    static let recentRequestWindow = Duration.seconds(10)
    /// The window of ``ProxyStatus/upstreamLatency``: exchanges that ended in the last minute
    /// (at most ``UpstreamLatencies/capacity`` of them).
    static let latencyWindow = Duration.seconds(60)

    /// The status document now, from these figures and `cache`'s sizes and shared level.
    func status(
        of cache: HTTPCache,
        upstream: String,
        now: ContinuousClock.Instant = .now,
        date: Date = Date()
    ) async -> ProxyStatus {
        let totals = counters.snapshot
        let uptime = max(0, (now - start).timeInterval)
        let recent = rate.perSecond(requests: totals.requests, over: Self.recentRequestWindow)
        var disk: ProxyStatus.Level?
        if cache.disk != nil {
            // A failed walk shows the capacity with no usage rather than failing the page.
            let usage = try? await cache.diskUsage()
            disk = ProxyStatus.Level(
                bytes: usage?.size.rawValue ?? 0,
                capacityBytes: cache.configuration.diskCapacity.rawValue,
                entries: usage?.count
            )
        }
        return ProxyStatus(
            generatedAt: date,
            startedAt: startDate,
            uptimeSeconds: Self.thousandths(uptime),
            upstream: upstream,
            requests: ProxyStatus.Requests(
                total: totals.requests,
                perSecondSinceStart: Self.thousandths(uptime > 0 ? Double(totals.requests) / uptime : 0),
                perSecondRecent: recent.map { Self.thousandths($0.perSecond) },
                recentWindowSeconds: recent.map { Self.thousandths($0.seconds) },
                upstreamErrors: totals.upstreamErrors,
                byOutcome: ProxyStatus.ByOutcome(
                    hit: totals.hits,
                    stale: totals.staleHits,
                    revalidated: totals.revalidations,
                    miss: totals.misses,
                    bypass: totals.bypasses
                )
            ),
            hitRatio: ProxyStatus.HitRatio(
                ratio: totals.cacheableLookups == 0
                    ? nil : Self.thousandths(Double(totals.cacheHits) / Double(totals.cacheableLookups)),
                hits: totals.cacheHits,
                cacheableLookups: totals.cacheableLookups
            ),
            bytesServed: ProxyStatus.BytesServed(
                fromCache: totals.bytesFromCache,
                fromUpstream: totals.bytesFromUpstream
            ),
            cache: ProxyStatus.Cache(
                memory: ProxyStatus.Level(
                    bytes: cache.memoryUsage.rawValue,
                    capacityBytes: cache.configuration.memoryCapacity.rawValue,
                    entries: cache.memoryEntryCount,
                    setAsideBytes: cache.memorySetAside.rawValue
                ),
                disk: disk,
                spill: cache.spillCapacity.map {
                    let figures = cache.spilledAnswerFigures
                    return ProxyStatus.Spill(hits: figures.hits, bytes: figures.bytes, capacityBytes: $0)
                }
            ),
            upstreamLatency: Self.latency(latencies.durations(since: now - Self.latencyWindow)),
            sharedTier: cache.sharedTierState.map {
                ProxyStatus.SharedTier(
                    healthy: $0.isHealthy,
                    outageSince: $0.outageStart,
                    failures: $0.failures,
                    pendingWrites: $0.pendingWrites
                )
            },
            recentInvalidations: invalidations.all.map {
                ProxyStatus.Invalidation(time: $0.time, kind: $0.kind.rawValue, target: $0.target, removed: $0.removed)
            }
        )
    }

    /// Mean, nearest-rank p50 and p99, and maximum of `durations`; `nil` when there are none.
    static func latency(_ durations: [Duration]) -> ProxyStatus.Latency? {
        guard !durations.isEmpty else { return nil }
        let milliseconds = durations.map { $0.timeInterval * 1_000 }.sorted()
        func percentile(_ fraction: Double) -> Double {
            let rank = Int((fraction * Double(milliseconds.count)).rounded(.up))
            return milliseconds[min(max(rank, 1), milliseconds.count) - 1]
        }
        return ProxyStatus.Latency(
            samples: milliseconds.count,
            windowSeconds: latencyWindow.timeInterval,
            meanMilliseconds: thousandths(milliseconds.reduce(0, +) / Double(milliseconds.count)),
            p50Milliseconds: thousandths(percentile(0.5)),
            p99Milliseconds: thousandths(percentile(0.99)),
            maxMilliseconds: thousandths(milliseconds[milliseconds.count - 1])
        )
    }

    /// `value` to three decimals: a microsecond of milliseconds, a millisecond of seconds; the
    /// rest is noise a reader would have to skip.
    static func thousandths(_ value: Double) -> Double {
        (value * 1_000).rounded() / 1_000
    }
}
