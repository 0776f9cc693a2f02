import Foundation
import StowageCache
import StowageCore
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
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

        // The holder takes the key's load lock and keeps loading.
        let holding = Task {
            try await holder.value(forKey: "k") {
                try await Task.sleep(for: .seconds(3_600))
                return "a"
            }
        }
        defer { holding.cancel() }
        try await eventually { try await holderTier.isLockedForLoading(key: "k") }

        let waiting = Task { try await waiter.value(forKey: "k") { "b" } }
        try await eventually { clock.sleeperCount > 0 }  // polling, on the injected clock
        clock.advance(by: .seconds(3_600))
        let deadline = ContinuousClock.now + .seconds(10)
        while !Task.isCancelled, ContinuousClock.now < deadline, clock.sleeperCount > 0 {
            clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(5))
        }
        // Were the clock ignored the waiter would wait an hour: cut it short rather than hang.
        let cutoff = Task {
            try await Task.sleep(for: .seconds(45))
            waiting.cancel()
        }
        defer { cutoff.cancel() }
        let value = try? await waiting.value
        #expect(value == "b", "past the wait timeout the waiter loads by itself")
    }
}
