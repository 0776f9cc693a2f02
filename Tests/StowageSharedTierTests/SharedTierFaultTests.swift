import Foundation
import StowageCache
import StowageCore
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageSharedTier

/// Faults of the shared level found by a hostile-input audit: purges that never reached the
/// other nodes once Redis had lost its keys, and a hung Redis that stalled every request for
/// the client's command timeouts.
@Suite(
    "Shared tier: purges whatever Redis holds, hung Redis bounded",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
)
struct SharedTierFaultTests {
    // MARK: - Purges reach every node

    @Test("a removal after FLUSHALL reaches the other node, though its DEL removes nothing")
    func purgeAfterFlushallReachesOtherNode() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, _) = try await fleet.node(namespace: "f1", name: "a")
        let (b, _) = try await fleet.node(namespace: "f1", name: "b")
        // b writes the value itself: a node does not hear its own writes, so no invalidation of
        // a's write can arrive late and drop b's copies after the FLUSHALL below.
        try await b.setValue("v1", forKey: "k")
        #expect(try await b.disk.data(forKey: "k") != nil)

        // Redis loses its values; b keeps its local copies (an emptied shared level refutes nothing).
        _ = try fleet.server.cli(["FLUSHALL"])
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.value(forKey: "k") == "v1")

        // Given a purge on a, when Redis no longer holds the key, then b still drops its copy.
        try await a.removeValue(forKey: "k")
        try await eventually { try await b.value(forKey: "k") == nil }
        #expect(try await b.disk.data(forKey: "k") == nil)
    }

    @Test("a removal and a ban made while Redis is down reach the other node after Redis restarts empty")
    func purgeDuringOutageReachesOtherNodeAfterRestart() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let scratch = try TemporaryDirectory()
        let quickReconnect: (inout RedisConfiguration) -> Void = {
            $0.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(200))
        }
        let (a, tierA) = try await makeNode(
            url: server.url,
            namespace: "f2",
            scratch: scratch,
            name: "a",
            configure: quickReconnect
        )
        let (b, tierB) = try await makeNode(
            url: server.url,
            namespace: "f2",
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
        for key in ["k", "img/1", "kept"] { try await a.setValue("v1", forKey: key) }
        try await eventually {
            for key in ["k", "img/1", "kept"] {
                guard try await b.value(forKey: key) == "v1", try await b.disk.data(forKey: key) != nil else {
                    return false
                }
            }
            return true
        }

        server.kill()
        try await a.removeValue(forKey: "k")
        // The tier throws what Redis did not take; the cache's levels keep the ban with the
        // removal, in their one outage queue.
        await #expect(throws: (any Error).self) { try await tierA.invalidate(keysWithPrefix: "img/") }
        await a.levels.banShared("img/")
        #expect(a.pendingSharedWrites == 2)
        try await server.start()

        // b learns that Redis came back empty and keeps its copies — but not the purged ones.
        try await eventually {
            let purged = try await b.value(forKey: "k")
            let banned = try await b.value(forKey: "img/1")
            return purged == nil && banned == nil
        }
        #expect(try await b.value(forKey: "kept") == "v1")
    }

    // MARK: - A hung Redis costs a request its budget, then nothing

    @Test(
        "a stopped Redis (SIGSTOP): the first request is bounded by the budget, later ones fail fast, SIGCONT closes the breaker"
    )
    func stoppedRedisIsBoundedByTheBudget() async throws {
        let fleet = try await Fleet()
        defer {
            fleet.server.resume()
            fleet.close()
        }
        let probeClock = SteppedClock()
        let budgetClock = SteppedClock()
        var tierOptions = RedisSharedTier.Options()
        tierOptions.requestBudget = .seconds(1)
        tierOptions.requestBudgetClock = budgetClock
        tierOptions.probeClock = probeClock
        let (a, tier) = try await fleet.node(
            namespace: "f3",
            name: "a",
            tierOptions: tierOptions,
            // Far beyond the budget: only the budget can end a call to the stopped server.
            configure: { $0.commandTimeout = .seconds(3_600) }
        )
        try await a.setValue("v1", forKey: "warm")

        // Before the breaker, four sequential commands each waited the command timeout; now the
        // first call waits one budget, which the test lets pass on the budget clock.
        fleet.server.suspend()
        let first = Task { try await a.value(forKey: "miss-0") { "loaded" } }
        try await eventually(timeout: .seconds(300)) { tier.breaker.callsInBudget == 1 }
        budgetClock.advance(by: .seconds(1))
        #expect(try await first.value == "loaded")
        #expect(tier.isCircuitOpen)
        // With the breaker open no request waits for Redis: twenty of them complete while the
        // budget clock stands still, and none is even given the budget.
        let started = tier.breaker.callsStartedInBudget
        for index in 1...20 {
            #expect(try await a.value(forKey: "miss-\(index)") { "loaded" } == "loaded")
        }
        #expect(tier.breaker.callsStartedInBudget == started, "a request with the breaker open waited for Redis")
        #expect(tier.isCircuitOpen)

        // Once Redis runs again, a probe (at the injected clock's pace) closes the breaker.
        fleet.server.resume()
        try await eventually {
            probeClock.advance(by: .seconds(2))
            return !tier.isCircuitOpen
        }
        try await a.setValue("v2", forKey: "after")
        #expect(try await tier.entry(forKey: "after") != nil)
        #expect(!tier.isCircuitOpen)
    }

    @Test("a server that takes the handshake but never answers a command: every request is bounded")
    func hungServerBoundsEveryRequest() async throws {
        let server = try HungRedisServer()
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        var configuration = try RedisConfiguration(url: server.url)
        // Far beyond the budget: only the budget can end a call to the hung server.
        configuration.connectTimeout = .seconds(3_600)
        configuration.commandTimeout = .seconds(3_600)
        var tierOptions = RedisSharedTier.Options()
        tierOptions.requestBudget = .milliseconds(300)
        let budgetClock = SteppedClock()
        tierOptions.requestBudgetClock = budgetClock
        tierOptions.probeClock = SteppedClock()
        let tier = try RedisSharedTier(
            client: RedisClient(configuration: configuration),
            namespace: "f4",
            options: tierOptions
        )
        defer { Task { await tier.shutdown() } }
        let cache = HybridCache(
            memory: try MemoryCache<String, String>(configuration: .init(name: "a")),
            disk: try DiskCache(directory: scratch.url.appending(path: "a"), configuration: .init(name: "a")),
            serializer: StringSerializer(),
            shared: tier
        )
        // Before the breaker: 4–5 sequential commands × the command timeout, every request; now
        // the first call waits one budget (let pass on the budget clock) and nothing else waits.
        let loads = Task { () throws -> [String?] in
            var values: [String?] = []
            for index in 0..<5 { values.append(try await cache.value(forKey: "k\(index)") { "loaded" }) }
            return values
        }
        try await eventually(timeout: .seconds(300)) { tier.breaker.callsInBudget == 1 }
        budgetClock.advance(by: .milliseconds(300))
        #expect(try await loads.value == Array(repeating: "loaded", count: 5))
        #expect(tier.breaker.callsStartedInBudget == 1, "after the first budget ran out, a call still waited for Redis")
        #expect(tier.isCircuitOpen)
    }

    // MARK: - Options

    @Test(
        "options out of range are refused with a message saying what is allowed",
        arguments: [Duration.zero, .milliseconds(-1), .seconds(3_601), .seconds(Int64.max)]
    )
    func optionsOutOfRange(budget: Duration) throws {
        var options = RedisSharedTier.Options()
        options.requestBudget = budget
        let error = try #require(throws: StowageError.self) { try options.validate() }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("requestBudget") && error.message.contains("more than zero"))
        var probes = RedisSharedTier.Options()
        probes.firstProbeDelay = .seconds(5)
        probes.maximumProbeDelay = .seconds(1)
        #expect {
            try probes.validate()
        } throws: { ($0 as? StowageError)?.code == .invalidConfiguration }
    }
}
