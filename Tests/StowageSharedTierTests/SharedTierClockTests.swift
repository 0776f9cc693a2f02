import Foundation
import StowageCache
import StowageRedis
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Testing

/// The tier's dates come from its ``RedisSharedTier/Options/entryClock``, so a test moves them.
@Suite(.enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")) struct SharedTierClockTests {
    @Test("an entry's lifetime is written and read by the tier's entry clock, not the system's")
    func entryExpiryFollowsEntryClock() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        // 2027: a year or more from the system's date, so a lifetime measured against the
        // system clock would be a year off.
        let clock = ManualClock()
        var options = RedisSharedTier.Options.generous
        options.entryClock = clock.cacheClock
        let tier = try RedisSharedTier(
            client: RedisClient(configuration: server.configuration),
            namespace: "clock",
            options: options
        )
        try await tier.setData(Data("v".utf8), forKey: "k", timeToLive: .seconds(600))
        let fresh = try await tier.entry(forKey: "k")
        #expect(fresh?.data == Data("v".utf8))
        let left = fresh?.timeToLive ?? .zero
        #expect(left > .seconds(590) && left <= .seconds(600), "\(left) left by the entry clock")
        clock.advance(by: .seconds(601))
        // Expired by the entry clock, though Redis keeps the key for 600 s of real time.
        let expired = try await tier.entry(forKey: "k")
        #expect(expired == nil)
        await tier.shutdown()
    }
}
