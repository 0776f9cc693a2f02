import Foundation
import StowageCache
import StowageRedis
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Synchronization
import Testing

/// Invalidations are messages: a node that was not listening when one was sent never receives
/// it. These tests make a node miss messages for real — it was not running, or its
/// subscription was killed on the server — and check that it does not go on serving what they
/// invalidated, that it keeps its local copies when Redis itself lost its values, and that
/// changes it made while Redis was down reach the fleet when Redis is back.
@Suite(
    "Shared tier: missed invalidations and outage writes",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct MissedInvalidationTests {
    @Test("a disk copy from an earlier run is confirmed against Redis before it is served")
    func diskCopiesFromAnEarlierRun() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        do {
            let (earlier, tier) = try await fleet.node(namespace: "m1", name: "b")
            for key in ["changed", "removed", "kept"] { try await earlier.setValue("v1", forKey: key) }
            await tier.shutdown()
        }
        // While node b is not running, another node changes two of its keys.
        let (a, _) = try await fleet.node(namespace: "m1", name: "a")
        try await a.setValue("v2", forKey: "changed")
        try await a.removeValue(forKey: "removed")

        // Node b starts again over the same disk, which still holds the old copies.
        let (b, _) = try await fleet.node(namespace: "m1", name: "b")
        #expect(try await b.disk.data(forKey: "changed") == Data("v1".utf8))
        #expect(try await b.value(forKey: "changed") == "v2")
        #expect(try await b.disk.data(forKey: "changed") == Data("v2".utf8))
        #expect(try await b.value(forKey: "removed") == nil)
        #expect(try await b.disk.data(forKey: "removed") == nil)
        #expect(try await b.value(forKey: "kept") == "v1")
        // Confirmed copies are current from then on: the next disk read does not ask Redis.
        let sharedReads = b.sharedStatistics.hits + b.sharedStatistics.misses
        b.memory.removeAll()
        #expect(try await b.value(forKey: "kept") == "v1")
        #expect(try await b.value(forKey: "changed") == "v2")
        #expect(b.sharedStatistics.hits + b.sharedStatistics.misses == sharedReads)
    }

    @Test("with Redis unreachable, a disk copy from an earlier run is served unchecked")
    func unconfirmedCopyServedWhileDown() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        do {
            let (earlier, tier) = try await fleet.node(namespace: "m2", name: "b")
            try await earlier.setValue("v1", forKey: "k")
            await tier.shutdown()
        }
        fleet.server.stop()
        var configuration = fleet.server.configuration
        configuration.connectTimeout = .seconds(1)
        let tier = try RedisSharedTier(
            client: RedisClient(configuration: configuration),
            namespace: "m2",
            options: .generous
        )
        let b = HybridCache(
            memory: try MemoryCache<String, String>(),
            disk: try DiskCache(directory: fleet.scratch.url.appending(path: "b"), configuration: .init(name: "b")),
            serializer: StringSerializer(),
            shared: tier
        )
        #expect(try await b.value(forKey: "k") == "v1")
        #expect(b.sharedTierFailures >= 1)
        #expect(try await b.disk.data(forKey: "k") == Data("v1".utf8))
    }

    @Test("a node whose subscription breaks confirms its disk copies when it comes back")
    func subscriptionGap() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        // Publishing nodes: with server tracking, Redis itself would tell b of the writes below
        // (the tracking connection's gap is TrackingInvalidationTests' business).
        let (a, tierA) = try await fleet.node(
            namespace: "m3",
            name: "a",
            invalidations: .publish
        )
        let (b, _) = try await fleet.node(
            namespace: "m3",
            name: "b",
            invalidations: .publish
        )
        try await seed(["changed", "removed"], from: a, to: b)
        // Changes that b never hears of: written to Redis with no invalidation message, as if
        // the message had been sent while b's subscription was down.
        let entry = SharedEntryFormat.encode(Data("v2".utf8), timeToLive: nil)
        try await tierA.client.send(.set("m3:{=changed}", value: RedisArgument(entry)))
        try await tierA.client.send(.del("m3:{=removed}"))
        b.memory.removeAll()
        #expect(try await b.value(forKey: "changed") == "v1", "b should still serve its copy: it missed the message")

        // The server drops every subscriber; b resubscribes, learns it may have missed messages
        // (the epoch is unchanged, so Redis kept its values) and confirms its copies.
        let removals = b.levels.removalCount
        try fleet.server.cli(["CLIENT", "KILL", "TYPE", "pubsub"])
        try await eventually {
            b.levels.removalCount > removals
        }
        #expect(try await b.value(forKey: "changed") == "v2")
        #expect(try await b.value(forKey: "removed") == nil)
        #expect(try await b.disk.data(forKey: "removed") == nil)
    }

    @Test("writes and removals made while Redis was down reach it and the other nodes when it is back")
    func outageWritesReplayed() async throws {
        // Redis keeps its data across the kill (append-only file, fsync per write), as a server
        // that was unreachable for a while would.
        let server = try await RedisServerProcess.start(
            extraArguments: ["--appendonly", "yes", "--appendfsync", "always"]
        )
        defer { server.remove() }
        let scratch = try TemporaryDirectory()
        let quickReconnect: (inout RedisConfiguration) -> Void = {
            $0.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(200))
        }
        let (a, tierA) = try await makeNode(
            url: server.url,
            namespace: "m4",
            scratch: scratch,
            name: "a",
            configure: quickReconnect
        )
        let (b, tierB) = try await makeNode(
            url: server.url,
            namespace: "m4",
            scratch: scratch,
            name: "b",
            configure: quickReconnect
        )
        defer {
            Task {
                await tierA.shutdown()
                await tierB.shutdown()
            }
        }
        try await seed(["written", "removed"], from: a, to: b)

        server.kill()
        try await a.setValue("v2", forKey: "written")
        try await a.removeValue(forKey: "removed")
        #expect(a.sharedTierFailures >= 2)
        #expect(a.pendingSharedWrites == 2)
        try await server.start()

        // a sends both changes once Redis answers; b hears of them and drops its copies.
        try await eventually { a.pendingSharedWrites == 0 }
        #expect(try await tierA.entry(forKey: "written")?.data == Data("v2".utf8))
        #expect(try await tierA.entry(forKey: "removed") == nil)
        try await eventually {
            let written = try await b.value(forKey: "written")
            let removed = try await b.value(forKey: "removed")
            return written == "v2" && removed == nil
        }
        // a kept its own change: confirming its disk copy did not bring Redis's older value back.
        a.memory.removeAll()
        #expect(try await a.value(forKey: "written") == "v2")
        #expect(try await a.value(forKey: "removed") == nil)
    }

    /// Writes "v1" for `keys` through `writer` and waits until `reader` serves each from its
    /// disk: the writer's invalidations of its own writes may reach the reader after its first
    /// read and drop that copy once.
    private func seed(_ keys: [String], from writer: HybridCache<String>, to reader: HybridCache<String>) async throws {
        for key in keys { try await writer.setValue("v1", forKey: key) }
        try await eventually {
            for key in keys {
                guard try await reader.value(forKey: key) == "v1", try await reader.disk.data(forKey: key) != nil else {
                    return false
                }
            }
            return true
        }
    }
}
