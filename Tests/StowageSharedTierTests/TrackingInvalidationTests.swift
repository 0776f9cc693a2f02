import Foundation
import StowageCache
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageSharedTier

/// Invalidations by server-assisted client-side caching (`CLIENT TRACKING … BCAST … NOLOOP`):
/// the server tells each node which values others wrote, so writes send no `PUBLISH`; and the
/// fallback to `PUBLISH` where the server cannot track.
@Suite(
    "Shared tier: invalidations by server tracking, PUBLISH fallback",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct TrackingInvalidationTests {
    // MARK: Tracking

    @Test("a write on one node drops the other node's copies, and no PUBLISH is sent")
    func trackedWriteInvalidatesWithoutPublish() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, tierA) = try await fleet.node(namespace: "r1", name: "a")
        let (b, tierB) = try await fleet.node(namespace: "r1", name: "b")
        #expect(tierA.isTracking && tierB.isTracking)
        try fleet.server.cli(["CONFIG", "RESETSTAT"])

        try await a.setValue("v1", forKey: "k")
        #expect(try await b.value(forKey: "k") == "v1")
        try await a.setValue("v2", forKey: "k")
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.disk.data(forKey: "k") == nil)
        #expect(try await b.value(forKey: "k") == "v2")
        try await a.removeValue(forKey: "k")
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.value(forKey: "k") == nil)
        // Loads through the lock write the value with the fenced-set script: tracked as well.
        #expect(try await a.value(forKey: "loaded") { "by-a" } == "by-a")
        #expect(try await b.value(forKey: "loaded") == "by-a")
        try await a.removeValue(forKey: "loaded")
        try await eventually { b.memory.value(forKey: "loaded") == nil }

        #expect(try commandCalls("publish", on: fleet.server) == 0)
    }

    @Test("a node does not hear its own writes; a plain client's write reaches every node")
    func ownWritesNotEchoed() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, tierA) = try await fleet.node(namespace: "r2", name: "a")
        let (b, _) = try await fleet.node(namespace: "r2", name: "b")
        try #require(tierA.isTracking)
        let heardByA = tierA.invalidations()
        try await a.setValue("mine", forKey: "own")
        try await a.removeValue(forKey: "own-removed")
        #expect(try await a.value(forKey: "own-loaded") { "mine" } == "mine")

        // A client that is not a tier writes a value key (and a lock key, which is no value).
        let plain = RedisClient(configuration: fleet.server.configuration)
        defer { Task { await plain.shutdown() } }
        try await b.setValue("old", forKey: "plain")
        #expect(try await b.value(forKey: "plain") == "old")
        try await plain.send(.set("r2:{=plain}:lock", value: "1"))
        try await plain.send(
            .set("r2:{=plain}", value: RedisArgument(SharedEntryFormat.encode(Data("new".utf8), timeToLive: nil)))
        )
        try await eventually { b.memory.value(forKey: "plain") == nil }
        #expect(try await b.value(forKey: "plain") == "new")

        // Pushes arrive in the order the server ran the writes: a's own came first, so were they
        // echoed, the first invalidation a hears would be one of them, not b's write of "plain".
        let first = try await firstInvalidation(in: heardByA, within: .seconds(20))
        #expect(first == .key("plain"))
        #expect(a.memory.value(forKey: "own") == "mine")
        #expect(a.memory.value(forKey: "own-loaded") == "mine")
    }

    @Test("a killed tracking connection counts as a gap: .all, then tracking again on a new connection")
    func trackingConnectionKilled() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, tierA) = try await fleet.node(namespace: "r3", name: "a")
        let (b, tierB) = try await fleet.node(namespace: "r3", name: "b") {
            $0.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(200))
        }
        try #require(tierB.isTracking)
        try await a.setValue("v1", forKey: "k")
        #expect(try await b.value(forKey: "k") == "v1")
        let heard = tierB.invalidations()
        let before = try trackingClients(on: fleet.server)
        #expect(before.count == 2)

        for id in before { try fleet.server.cli(["CLIENT", "KILL", "ID", id]) }
        #expect(try await firstInvalidation(in: heard, within: .seconds(30)) { $0 == .all } == .all)
        try await eventually { b.memory.value(forKey: "k") == nil }
        try await eventually { tierA.isTracking && tierB.isTracking }
        let after = try trackingClients(on: fleet.server)
        #expect(after.count == 2 && Set(after).isDisjoint(with: before))

        // Invalidations flow on the new connections, still without PUBLISH.
        try fleet.server.cli(["CONFIG", "RESETSTAT"])
        #expect(try await b.value(forKey: "k") == "v1")
        try await a.setValue("v2", forKey: "k")
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.value(forKey: "k") == "v2")
        #expect(try commandCalls("publish", on: fleet.server) == 0)
    }

    @Test("FLUSHALL reaches a tracking node as .emptied")
    func flushIsEmptied() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (_, tier) = try await fleet.node(namespace: "r4", name: "a")
        try #require(tier.isTracking)
        let heard = tier.invalidations()
        try fleet.server.cli(["FLUSHALL"])
        #expect(try await firstInvalidation(in: heard, within: .seconds(20)) == .emptied)
    }

    @Test(
        "value keys decode to tier keys; lock and fence keys are ignored",
        arguments: [
            ("ns:{=k}", "k"), ("ns:{=a}:lock}", "a}:lock"), ("ns:{=}", ""), ("ns:{=é ü}", "é ü"),
            ("ns:{=k}:lock", nil), ("ns:{=k}:fence", nil), ("ns:epoch", nil), ("other:{=k}", nil),
        ] as [(String, String?)]
    )
    func valueKeyDecoding(redisKey: String, expected: String?) {
        #expect(InvalidationTracker.tierKey(fromRedisKey: redisKey, prefix: "ns:{=") == expected)
    }

    // MARK: Fallback

    @Test(
        "where the server cannot track, writes are published and still invalidate",
        arguments: [Fallback.resp2, .clientCommandRenamed, .configuredToPublish]
    )
    func fallbackPublishes(_ fallback: Fallback) async throws {
        let server = try await RedisServerProcess.start(
            extraArguments: fallback == .clientCommandRenamed ? ["--rename-command", "CLIENT", ""] : []
        )
        defer { server.remove() }
        let scratch = try TemporaryDirectory()
        let node = { (name: String) in
            try await makeNode(
                url: server.url,
                namespace: "r5",
                scratch: scratch,
                name: name,
                invalidations: fallback == .configuredToPublish ? .publish : .automatic
            ) {
                if fallback == .resp2 { $0.protocolVersion = .resp2 }
            }
        }
        let (a, tierA) = try await node("a")
        let (b, tierB) = try await node("b")
        defer {
            Task {
                await tierA.shutdown()
                await tierB.shutdown()
            }
        }
        #expect(!tierA.isTracking && !tierB.isTracking)
        try await a.setValue("v1", forKey: "k")
        #expect(try await b.value(forKey: "k") == "v1")
        try await a.setValue("v2", forKey: "k")
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.value(forKey: "k") == "v2")
        #expect(a.memory.value(forKey: "k") == "v2")
        // Two writes, one PUBLISH or two: the publisher coalesces keys written while one is in flight.
        #expect(try commandCalls("publish", on: server) >= 1)
    }

    @Test("a tracking node hears a node that publishes (a fleet mid-upgrade)")
    func trackingNodeHearsPublishingNode() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (old, oldTier) = try await fleet.node(
            namespace: "r6",
            name: "old",
            invalidations: .publish
        )
        let (new, newTier) = try await fleet.node(namespace: "r6", name: "new")
        try #require(newTier.isTracking && !oldTier.isTracking)
        try await old.setValue("v1", forKey: "k")
        #expect(try await new.value(forKey: "k") == "v1")
        try await old.setValue("v2", forKey: "k")
        try await eventually { new.memory.value(forKey: "k") == nil }
        #expect(try await new.value(forKey: "k") == "v2")
    }

    enum Fallback: String, CustomTestStringConvertible {
        case resp2, clientCommandRenamed, configuredToPublish
        var testDescription: String { rawValue }
    }
}

/// `calls` of `command` in `INFO commandstats`; 0 when it never ran.
private func commandCalls(_ command: String, on server: RedisServerProcess) throws -> Int {
    let stats = try server.cli(["INFO", "commandstats"])
    guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):") }),
        let calls = line.split(separator: ",").first?.split(separator: "=").last
    else { return 0 }
    return Int(calls) ?? 0
}

/// The ids of the connections with tracking on (`t` in `CLIENT LIST`'s flags).
private func trackingClients(on server: RedisServerProcess) throws -> [String] {
    try server.cli(["CLIENT", "LIST"]).split(whereSeparator: \.isNewline).compactMap { line in
        let fields = Dictionary(
            line.split(separator: " ").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
                .filter { $0.count == 2 }.map { ($0[0], $0[1]) },
            uniquingKeysWith: { first, _ in first }
        )
        guard let flags = fields["flags"], flags.contains("t"), let id = fields["id"] else { return nil }
        return id
    }
}
