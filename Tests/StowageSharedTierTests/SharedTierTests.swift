import Foundation
import StowageCache
import StowageRedis
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Synchronization
import Testing

/// The shared level's rules (outage replay, confirmation of disk copies, gaps, fills that an
/// invalidation overtakes) are tested in milliseconds against StowageTesting's
/// `InMemorySharedLevel`, through both facades (`SharedLevelEngineTests`). What stays here is
/// what only a real server shows: expiry, pub/sub between processes, the load lock, a server
/// killed or paused mid-call, the circuit breaker.
@Suite("Shared tier on Redis", .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed"))
struct SharedTierTests {
    @Test("reads fall through memory → disk → Redis and fill the levels above; TTL becomes Redis expiry")
    func fallThrough() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (writer, writerTier) = try await fleet.node(namespace: "t1", name: "a")
        let (reader, _) = try await fleet.node(namespace: "t1", name: "b")
        try await writer.setValue("hello", forKey: "greeting", timeToLive: .seconds(60))
        let ttl = try await writerTier.client.send(RedisCommand("PTTL", "t1:{=greeting}", keyIndex: 1)).integer ?? 0
        #expect(ttl > 50_000 && ttl <= 60_000)
        #expect(reader.memory.value(forKey: "greeting") == nil)
        #expect(try await reader.value(forKey: "greeting") == "hello")
        #expect(reader.sharedStatistics.hits >= 1)
        // The read filled memory and disk. (The writer's invalidation is published after its SET
        // and may reach the reader after this first read, dropping the copies once: read again.)
        try await eventually {
            let value = try await reader.value(forKey: "greeting")
            let onDisk = try await reader.disk.data(forKey: "greeting")
            return value == "hello" && reader.memory.value(forKey: "greeting") == "hello"
                && onDisk == Data("hello".utf8)
        }
        #expect(try await reader.value(forKey: "absent") == nil)
        #expect(reader.sharedStatistics.misses == 1)
    }

    @Test("an overwrite or removal on one node drops the other node's memory and disk copies")
    func invalidationInProcess() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, _) = try await fleet.node(namespace: "t2", name: "a")
        let (b, _) = try await fleet.node(namespace: "t2", name: "b")
        try await a.setValue("v1", forKey: "k")
        #expect(try await b.value(forKey: "k") == "v1")
        try await a.setValue("v2", forKey: "k")
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.disk.data(forKey: "k") == nil)
        #expect(try await b.value(forKey: "k") == "v2")
        // A node keeps its own fresh copy: its own invalidations do not come back to it.
        #expect(a.memory.value(forKey: "k") == "v2")
        try await a.removeValue(forKey: "k")
        try await eventually { b.memory.value(forKey: "k") == nil }
        #expect(try await b.value(forKey: "k") == nil)
    }

    @Test("a prefix invalidation (ban) drops the other node's memory and disk copies under the prefix, and only those")
    func prefixInvalidation() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (a, tierA) = try await fleet.node(namespace: "t2p", name: "a")
        let (b, _) = try await fleet.node(namespace: "t2p", name: "b")
        for key in ["user/1", "user/2", "other"] { try await a.setValue("v", forKey: key) }
        for key in ["user/1", "user/2", "other"] {
            try await eventually {
                let value = try await b.value(forKey: key)
                let onDisk = try await b.disk.data(forKey: key)
                return value == "v" && b.memory.value(forKey: key) == "v" && onDisk != nil
            }
        }
        try await tierA.invalidate(keysWithPrefix: "user/")
        try await eventually { b.memory.value(forKey: "user/1") == nil && b.memory.value(forKey: "user/2") == nil }
        try await eventually { try await b.disk.data(forKey: "user/2") == nil }
        #expect(try await b.disk.data(forKey: "user/1") == nil)
        #expect(b.memory.value(forKey: "other") == "v")
        #expect(try await b.disk.data(forKey: "other") != nil)
        // The sender's own copies stay: its bans do not come back to it.
        #expect(a.memory.value(forKey: "user/1") == "v")
    }

    @Test("two processes: invalidation reaches the other process; measured delay")
    func invalidationAcrossProcesses() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (local, _) = try await fleet.node(namespace: "t3", name: "local")
        let worker = try WorkerNode(
            url: fleet.server.url,
            namespace: "t3",
            directory: fleet.scratch.url.appending(path: "worker")
        )
        defer { worker.stop() }
        _ = try await worker.line(startingWith: "ready")
        var delays: [Duration] = []
        for round in 0..<20 {
            let key = "key-\(round)"
            try await local.setValue("old", forKey: key)
            worker.send("get \(key)")
            #expect(try await worker.line(startingWith: "value \(key)") == "value \(key) old")
            worker.send("watch \(key)")
            let start = ContinuousClock.now
            if round.isMultiple(of: 2) {
                try await local.setValue("new", forKey: key)
            } else {
                try await local.removeValue(forKey: key)
            }
            _ = try await worker.line(startingWith: "dropped \(key)")
            delays.append(ContinuousClock.now - start)
            // The "dropped" may come from the invalidation of the "old" write arriving late (each
            // write invalidates the others' copies); the new state must follow within moments.
            let expected = round.isMultiple(of: 2) ? "value \(key) new" : "miss \(key)"
            try await eventually {
                worker.send("get \(key)")
                return try await worker.line(startingWith: "value \(key)", orMiss: true) == expected
            }
        }
        delays.sort()
        print(
            "cross-process invalidation delay over \(delays.count) rounds (write → other process's memory copy gone, "
                + "including the pipe back to the test): median \(delays[delays.count / 2]), max \(delays.last!)"
        )
    }

    @Test("two processes and this one: the loader runs once across the fleet; all get its value")
    func coalescedLoadAcrossProcesses() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        // Waiters wait up to a minute here: on a loaded machine, the default 10 s could pass
        // before the loader's value lands, and a waiter would (correctly) load itself.
        var options = SharedTierOptions()
        options.loadWaitTimeout = .seconds(60)
        // What this node's load does, as the workers say it: "loader-ran KEY" or "waiting KEY".
        let (localEvents, localEvent) = AsyncStream.makeStream(of: String.self)
        options.onWaitingForAnotherNode = { localEvent.yield("waiting \($0)") }
        let (local, _) = try await fleet.node(
            namespace: "t4",
            name: "local",
            options: options
        )
        let workers = try (0..<2).map {
            try WorkerNode(
                url: fleet.server.url,
                namespace: "t4",
                directory: fleet.scratch.url.appending(path: "w\($0)")
            )
        }
        defer { workers.forEach { $0.stop() } }
        for worker in workers { _ = try await worker.line(startingWith: "ready") }
        var localEventsIterator = localEvents.makeAsyncIterator()
        for round in 0..<3 {
            let key = "report-\(round)"
            let localRuns = LoadCounters()
            let release = Gate()
            // Whichever node's loader runs holds it until the other two wait for it: the loads
            // overlap because the test saw them do so, not because the loader was slow.
            for worker in workers { worker.send("load \(key)") }
            async let localValue = local.value(forKey: key) {
                localRuns.operations.add(1, ordering: .relaxed)
                localEvent.yield("loader-ran \(key)")
                await release.wait()
                return "loaded-by-test"
            }
            var firstEvents: [String] = []
            while let event = await localEventsIterator.next() {
                if event.hasSuffix(" \(key)") {
                    firstEvents.append(event)
                    break
                }
            }
            for worker in workers {
                firstEvents.append(try await worker.line(startingWith: "loader-ran \(key)") { $0 == "waiting \(key)" })
            }
            #expect(
                firstEvents.filter { $0.hasPrefix("waiting") }.count == 2,
                "round \(round): two nodes should wait for the third's load: \(firstEvents)"
            )
            // Every loader is let go, also one that would run later (after the wait timeout).
            release.open()
            for worker in workers { worker.send("release \(key)") }
            var values = [try await localValue]
            var runs = localRuns.operations.load(ordering: .relaxed)
            for (worker, first) in zip(workers, firstEvents.dropFirst()) {
                if first.hasPrefix("loader-ran") { runs += 1 }
                var line = try await worker.line(startingWith: "loaded \(key)") { $0.hasPrefix("loader-ran") }
                if line.hasPrefix("loader-ran") {
                    runs += 1
                    line = try await worker.line(startingWith: "loaded \(key)")
                }
                values.append(String(line.split(separator: " ")[2]))
            }
            #expect(runs == 1, "round \(round): the loader ran \(runs) times")
            #expect(Set(values).count == 1, "round \(round): nodes saw \(values)")
        }
    }

    @Test("a waiter whose loader never finishes loads itself after the wait timeout")
    func waitTimeout() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        var options = SharedTierOptions()
        options.loadWaitTimeout = .milliseconds(400)
        let (cache, tier) = try await fleet.node(
            namespace: "t5",
            name: "a",
            options: options
        )
        // A node that took the lock and hung.
        let stuck = try #require(try await tier.lockForLoading(key: "slow", lease: .seconds(30)))
        let start = ContinuousClock.now
        let value = try await cache.value(forKey: "slow") { "mine" }
        #expect(value == "mine")
        #expect(ContinuousClock.now - start >= .milliseconds(350))
        // The hung node's late write is refused only if its lease ran out; here it still holds it.
        #expect(try await tier.setData(Data("late".utf8), forKey: "slow", timeToLive: nil, releasing: stuck))
    }

    @Test("the lock is refused once the value is there: a node that just missed it reads it, never loads again")
    func lockRefusedWhenValueStored() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let tier = try await RedisSharedTier.connect(url: server.url, namespace: "t7", options: .generous) {
            $0.connectTimeout = .seconds(30)
        }
        defer { Task { await tier.shutdown() } }
        // The last loader stored the value and let go between another node's miss and its lock.
        let loader = try #require(try await tier.lockForLoading(key: "k", lease: .seconds(30)))
        #expect(try await tier.setData(Data("v".utf8), forKey: "k", timeToLive: nil, releasing: loader))
        #expect(try await !tier.isLockedForLoading(key: "k"))
        #expect(try await tier.lockForLoading(key: "k", lease: .seconds(30)) == nil)
        // A node that takes that path reads the value without running its loader.
        let scratch = try TemporaryDirectory()
        let (cache, nodeTier) = try await makeNode(url: server.url, namespace: "t7", scratch: scratch, name: "a")
        defer { Task { await nodeTier.shutdown() } }
        let runs = Atomic<Int>(0)
        let value = try await cache.loadCoordinated(key: "k", timeToLive: nil) {
            runs.add(1, ordering: .relaxed)
            return "loaded"
        }
        #expect(value == "v")
        #expect(runs.load(ordering: .relaxed) == 0)
    }

    @Test("a stored value this node cannot read does not hold its load up until the wait timeout")
    func unreadableValueLoadsAtOnce() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        var options = SharedTierOptions()
        options.loadWaitTimeout = .seconds(60)
        let (cache, tier) = try await fleet.node(
            namespace: "t8",
            name: "a",
            options: options
        )
        // Bytes in the shared format's envelope that the String serializer cannot decode (a newer
        // node's format, say): the lock is refused because a value is there.
        try await tier.setData(Data([0xFF, 0xFE, 0xFD]), forKey: "k", timeToLive: nil)
        #expect(try await tier.lockForLoading(key: "k", lease: .seconds(30)) == nil)
        let start = ContinuousClock.now
        let value = try await cache.value(forKey: "k") { "mine" }
        #expect(value == "mine")
        #expect(ContinuousClock.now - start < .seconds(30), "waited for the wait timeout")
    }

    @Test("fencing: a loader whose lease ran out cannot overwrite the next holder's value")
    func fencing() async throws {
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        let tier = try await RedisSharedTier.connect(url: server.url, namespace: "t6", options: .generous) {
            $0.connectTimeout = .seconds(30)
        }
        defer { Task { await tier.shutdown() } }
        let first = try #require(try await tier.lockForLoading(key: "k", lease: .seconds(60)))
        #expect(try await tier.lockForLoading(key: "k", lease: .seconds(5)) == nil)
        #expect(try await tier.isLockedForLoading(key: "k"))
        // The lease runs out (made to, rather than waited for: no timing in tests).
        try await tier.client.send(RedisCommand("PEXPIRE", "t6:{=k}:lock", "1", keyIndex: 1))
        try await eventually { try await !tier.isLockedForLoading(key: "k") }
        // A lease far longer than the test: on a loaded machine, 5 s ran out before the write
        // that releases it (the write was then refused, as it should be for a lapsed lease).
        let second = try #require(try await tier.lockForLoading(key: "k", lease: .seconds(600)))
        #expect(second.fencingToken > first.fencingToken)
        #expect(try await !tier.setData(Data("stale".utf8), forKey: "k", timeToLive: nil, releasing: first))
        #expect(try await tier.setData(Data("fresh".utf8), forKey: "k", timeToLive: nil, releasing: second))
        #expect(try await tier.entry(forKey: "k")?.data == Data("fresh".utf8))
        #expect(try await !tier.isLockedForLoading(key: "k"))
        // A failed load releases its lock for the next node.
        let third = try #require(try await tier.lockForLoading(key: "k2", lease: .seconds(600)))
        try await tier.unlock(third)
        #expect(try await !tier.isLockedForLoading(key: "k2"))
    }

    @Test("Redis killed during load: no error, no hang, local levels serve, failures counted, recovery after restart")
    func degradation() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        let (cache, tier) = try await fleet.node(namespace: "t7", name: "a") {
            $0.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(200))
            $0.commandTimeout = .seconds(1)
        }
        for index in 0..<100 { try await cache.setValue("v\(index)", forKey: "k\(index)") }
        let counters = LoadCounters()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for caller in 0..<8 {
                    group.addTask {
                        var index = caller
                        while !counters.stop.load(ordering: .relaxed) {
                            do {
                                let key = "k\(index % 100)"
                                if index.isMultiple(of: 5) {
                                    try await cache.setValue("v\(index % 100)", forKey: key)
                                } else if try await cache.value(forKey: key) != "v\(index % 100)" {
                                    counters.errors.add(1, ordering: .relaxed)
                                }
                                _ = try await cache.value(forKey: "fresh-\(index % 10)") { "loaded" }
                            } catch {
                                counters.errors.add(1, ordering: .relaxed)
                            }
                            counters.operations.add(1, ordering: .relaxed)
                            index += 8
                        }
                    }
                }
            }
        }
        // The callers are under way against the live server before it goes.
        try await eventually { counters.operations.load(ordering: .relaxed) > 200 }
        let heard = tier.invalidations()
        fleet.server.kill()
        try await eventually { cache.sharedTierFailures > 0 }
        let before = counters.operations.load(ordering: .relaxed)
        // Callers keep going while Redis is down (no time bound: the suites share loaded cores).
        try await eventually { counters.operations.load(ordering: .relaxed) - before > 200 }
        try await fleet.server.start()
        // The restarted server is empty; k0 is rewritten all the time, so it shows writes arriving.
        try await eventually {
            (try? await tier.entry(forKey: "k0")) != nil
        }
        counters.stop.store(true, ordering: .relaxed)
        await load.value
        #expect(counters.errors.load(ordering: .relaxed) == 0)
        // The server came back empty (its epoch went with it): once the node has resubscribed and
        // learned that, its local copies stand — every one is still served, none dropped as
        // "absent from Redis" (nor before then: during the gap copies are served unconfirmed).
        let end = try await firstInvalidation(in: heard, within: .seconds(30)) { $0 == .all || $0 == .emptied }
        #expect(end == .emptied)
        for index in 0..<100 {
            let value = try await cache.value(forKey: "k\(index)")
            #expect(value == "v\(index)", "k\(index) after the restart")
        }
        // Writes reach Redis again.
        try await cache.setValue("after", forKey: "recovered")
        #expect(try await tier.entry(forKey: "recovered")?.data == Data("after".utf8))
    }

    @Test(
        "a change that could not reach Redis is dropped when another node's newer write of the key is heard, not replayed over it"
    )
    func pendingChangeYieldsToNewerWrite() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        // a's retries of kept changes wait on a clock that is never advanced: one that fired
        // after the unpause (100 ms on the real clock) would send a's change concurrently with
        // b's write below, and either could land last (seen under load: a's "mine" stood).
        var options = SharedTierOptions()
        options.waitClock = SteppedClock()
        let (a, tierA) = try await fleet.node(
            namespace: "t10",
            name: "a",
            options: options,
            invalidations: .publish
        ) { $0.commandTimeout = .seconds(1) }
        let (_, tierB) = try await fleet.node(
            namespace: "t10",
            name: "b",
            invalidations: .publish
        )
        // a's write times out against a server paused for writes: it stays local, pending.
        _ = try fleet.server.cli(["CLIENT", "PAUSE", "30000", "WRITE"])
        try await a.setValue("mine", forKey: "k")
        #expect(a.pendingSharedWrites == 1)
        _ = try fleet.server.cli(["CLIENT", "UNPAUSE"])
        // b writes the key afterwards; a hears it and drops its copy.
        try await tierB.setData(Data("theirs".utf8), forKey: "k", timeToLive: nil)
        try await eventually { try await a.disk.data(forKey: "k") == nil }
        #expect(a.pendingSharedWrites == 0)
        // a's timed-out write opened its circuit breaker; its background probe closes it once
        // the server answers again.
        try await eventually { !tierA.isCircuitOpen }
        // A recovery replays what is pending: nothing, so b's value stands (replaying a's change
        // would have deleted it, a's local copy being gone).
        await a.apply(.all)
        #expect(try await tierA.entry(forKey: "k")?.data == Data("theirs".utf8))
        #expect(try await a.value(forKey: "k") == "theirs")
    }
}

final class LoadCounters: Sendable {
    let stop = Atomic<Bool>(false)
    let errors = Atomic<Int>(0)
    let operations = Atomic<Int>(0)
}

@Suite(
    "Shared tier on a Redis Cluster",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed"),
    .timeLimit(.minutes(5))
)
struct SharedTierClusterTests {
    @Test("nodes on different cluster masters share values, invalidations and the load lock")
    func clusterTier() async throws {
        let cluster = try await RedisClusterProcesses.start()
        defer { cluster.stop() }
        let scratch = try TemporaryDirectory()
        let first = "redis://127.0.0.1:\(cluster.nodes[0].port)"
        let last = "redis://127.0.0.1:\(cluster.nodes[2].port)"
        // Load waits on a stepped clock: the loader holds until the other node waits on it.
        let clock = SteppedClock()
        var options = SharedTierOptions()
        options.waitClock = clock
        options.loadWaitTimeout = .seconds(3_600)
        let (a, tierA) = try await makeNode(url: first, namespace: "c1", scratch: scratch, name: "a", options: options)
        let (b, tierB) = try await makeNode(url: last, namespace: "c1", scratch: scratch, name: "b", options: options)
        defer {
            Task {
                await tierA.shutdown()
                await tierB.shutdown()
            }
        }
        #expect(tierA.client is RedisClusterClient)
        for index in 0..<50 { try await a.setValue("v\(index)", forKey: "key-\(index)", timeToLive: .seconds(300)) }
        for index in 0..<50 { #expect(try await b.value(forKey: "key-\(index)") == "v\(index)") }
        try await a.setValue("changed", forKey: "key-7")
        try await eventually { b.memory.value(forKey: "key-7") == nil }
        #expect(try await b.value(forKey: "key-7") == "changed")
        // The lock scripts touch value, lock and fence keys of one hash tag: one slot, no CROSSSLOT.
        let runs = LoadCounters()
        let loads = Task {
            async let fromA = a.value(forKey: "loaded") {
                runs.operations.add(1, ordering: .relaxed)
                try await eventually { clock.sleeperCount > 0 }  // the other node waits for this load
                return "once"
            }
            async let fromB = b.value(forKey: "loaded") {
                runs.operations.add(1, ordering: .relaxed)
                try await eventually { clock.sleeperCount > 0 }
                return "once"
            }
            let values = try await [fromA, fromB]
            runs.stop.store(true, ordering: .releasing)
            return values
        }
        defer { loads.cancel() }
        // Once the value has landed, the waiter's next poll on the stepped clock finds it.
        try await eventually {
            if runs.operations.load(ordering: .relaxed) >= 1, clock.sleeperCount > 0 { clock.advance(by: .seconds(1)) }
            return runs.stop.load(ordering: .acquiring)
        }
        #expect(try await loads.value == ["once", "once"])
        #expect(runs.operations.load(ordering: .relaxed) == 1)
    }
}

extension SharedTierTests {
    @Test(
        "a time-to-live or load-lock lease too long for Redis's milliseconds is stored as the longest it keeps, not a crash"
    )
    func hugeDurations() async throws {
        let fleet = try await Fleet()
        defer { fleet.close() }
        var options = SharedTierOptions()
        options.loadLockLease = .seconds(Int64.max)
        let (a, tierA) = try await fleet.node(namespace: "huge", name: "a", options: options)
        let (b, _) = try await fleet.node(namespace: "huge", name: "b")
        try await a.setValue("kept", forKey: "forever", timeToLive: .seconds(Int64.max))
        #expect(a.pendingSharedWrites == 0, "Redis took the write")
        let ttl = try await tierA.client.send(RedisCommand("PTTL", "huge:{=forever}", keyIndex: 1)).integer ?? 0
        #expect(ttl > 1_000 * 86_400 * 365 * 50, "\(ttl) ms")
        #expect(try await b.value(forKey: "forever") == "kept")
        // A load under the lease, and its value with a time-to-live as long.
        let loaded = try await a.value(forKey: "loaded", timeToLive: .seconds(Int64.max / 2)) { "from the loader" }
        #expect(loaded == "from the loader")
        #expect(try await b.value(forKey: "loaded") == "from the loader")
    }
}
