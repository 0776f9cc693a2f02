import Foundation
import StowageCache
import StowageCore
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Synchronization
import Testing

/// The shared level's load wait and polls follow the injected wait clock.
@Suite("Shared tier waits", .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed"))
struct WaitClockTests {
    @Test("a node waiting for another's load gives up when the injected clock passes the wait timeout")
    func loadWaitFollowsTheClock() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (holder, holderTier) = try await fleet.node(namespace: "wc", name: "a")
        let clock = SteppedClock()
        var options = SharedTierOptions()
        options.waitClock = clock
        options.loadWaitTimeout = .seconds(3_600)  // an hour of real time if the clock were ignored
        let (waiter, _) = try await fleet.node(
            namespace: "wc",
            name: "b",
            options: options
        )

        // The holder takes the key's load lock and keeps loading until cancelled.
        let (neverEnding, keepOpen) = AsyncStream<Void>.makeStream()
        defer { keepOpen.finish() }
        let holding = Task {
            try await holder.value(forKey: "k") {
                for await _ in neverEnding {}
                return "a"
            }
        }
        defer { holding.cancel() }
        try await eventually { try await holderTier.isLockedForLoading(key: "k") }

        let done = LoadCounters()
        let waiting = Task {
            defer { done.stop.store(true, ordering: .releasing) }
            return try await waiter.value(forKey: "k") { "b" }
        }
        defer { waiting.cancel() }
        try await eventually { clock.sleeperCount > 0 }  // polling, on the injected clock
        clock.advance(by: .seconds(3_600))
        // Were the clock ignored the waiter would wait an hour: eventually's minute catches that.
        try await eventually {
            clock.advance(by: .seconds(1))
            return done.stop.load(ordering: .acquiring)
        }
        let value = try? await waiting.value
        #expect(value == "b", "past the wait timeout the waiter loads by itself")
    }
}
