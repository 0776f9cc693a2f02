import Foundation
import StowageCache
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Testing

@Suite(
    "HybridCache as a Service on Redis",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct CacheServiceTests {
    @Test("invalidations sent before the cache runs are applied when it starts; a later run starts after a gap")
    func runAppliesWhatWasSentBefore() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, _) = try await fleet.node(namespace: "s1", name: "a")
        let (b, _) = try await fleet.node(
            namespace: "s1",
            name: "b",
            running: false
        )
        let (witness, _) = try await fleet.node(namespace: "s1", name: "witness")
        try await b.setValue("old", forKey: "changed")
        try await b.setValue("kept", forKey: "untouched")
        #expect(try await witness.value(forKey: "changed") == "old")
        try await a.setValue("new", forKey: "changed")
        // A running node drops "changed" once the invalidation arrives; b, not running, holds it.
        try await eventually { witness.memory.value(forKey: "changed") == nil }
        #expect(b.memory.value(forKey: "changed") == "old")

        let firstRun = Task { try await b.run() }
        try await eventually { b.memory.value(forKey: "changed") == nil }
        #expect(try await b.value(forKey: "changed") == "new")
        #expect(b.memory.value(forKey: "untouched") == "kept", "only what another node changed")

        // Stopped, then run again: what was sent in between is unknown, so memory is dropped.
        firstRun.cancel()
        try await firstRun.value
        let secondRun = Task { try await b.run() }
        defer { secondRun.cancel() }
        try await eventually { b.memory.value(forKey: "untouched") == nil }
        #expect(try await b.value(forKey: "untouched") == "kept", "the disk copy, confirmed")
    }

    @Test("run returns when the shared level shuts down")
    func runEndsWithTheTier() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (b, tier) = try await fleet.node(
            namespace: "s2",
            name: "b",
            running: false
        )
        let run = Task { try await b.run() }
        await tier.shutdown()
        try await run.value
    }
}
