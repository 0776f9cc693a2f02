import Foundation
import NIOCore
import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Synchronization
import Testing

@Suite("Redis Cluster hash slots")
struct RedisHashSlotTests {
    @Test("CRC16 and slots match the cluster specification's examples")
    func specificationExamples() {
        #expect(RedisHashSlot.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(RedisHashSlot.slot(for: "foo") == 12182)
        #expect(RedisHashSlot.slot(for: "{user1000}.following") == RedisHashSlot.slot(for: "{user1000}.followers"))
        #expect(RedisHashSlot.slot(for: "{user1000}.following") == RedisHashSlot.slot(for: "user1000"))
        // Hash tag edge cases from the spec: empty tag → whole key; first '{' and first '}' after it.
        #expect(RedisHashSlot.slot(for: "foo{}{bar}") == Int(RedisHashSlot.crc16(Array("foo{}{bar}".utf8)) & 0x3FFF))
        #expect(RedisHashSlot.slot(for: "foo{{bar}}zap") == RedisHashSlot.slot(for: "{bar"))
        #expect(RedisHashSlot.slot(for: "foo{bar}{zap}") == RedisHashSlot.slot(for: "bar"))
    }
}

@Suite(
    "RedisClusterClient against a 3-master cluster",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed"),
    .timeLimit(.minutes(5))
)
struct RedisClusterTests {
    @Test("keys spread over all masters; slots agree with CLUSTER KEYSLOT")
    func spread() async throws {
        let cluster = try await RedisClusterProcesses.start()
        defer { cluster.stop() }
        let client = try RedisClusterClient(seeds: [cluster.seeds[0]])
        defer { Task { await client.shutdown() } }
        for index in 0..<300 { try await client.send(.set("key:\(index)", value: RedisArgument(index))) }
        for index in 0..<300 { #expect(try await client.send(.get("key:\(index)")).integer == Int64(index)) }
        #expect(Set(client.masters).count == 3)
        for node in cluster.nodes {
            let count = Int(try node.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(count > 50, "node \(node.port) holds \(count) keys")
        }
        for index in stride(from: 0, to: 300, by: 7) {
            let serverSlot = try cluster.nodes[0].cli(["CLUSTER", "KEYSLOT", "key:\(index)"])
            #expect(
                Int(serverSlot.trimmingCharacters(in: .whitespacesAndNewlines))
                    == RedisHashSlot.slot(for: "key:\(index)")
            )
        }
        // Keyless commands go to any master; multi-key commands in one hash tag work.
        #expect(try await client.send(.ping) == .simpleString("PONG"))
        try await client.send(RedisCommand("MSET", "{t}a", "1", "{t}b", "2", keyIndex: 1))
        #expect(
            try await client.send(RedisCommand("MGET", "{t}a", "{t}b", keyIndex: 1))
                == .array([.bulkString("1"), .bulkString("2")])
        )
    }

    @Test("a slot range resharded between masters during load is followed through MOVED/ASK with no failed command")
    func reshardUnderLoad() async throws {
        let cluster = try await RedisClusterProcesses.start()
        defer { cluster.stop() }
        let client = try RedisClusterClient(seeds: cluster.seeds)
        defer { Task { await client.shutdown() } }
        // Keys whose slots the reshard will move: redis-cli moves the source's lowest slots first.
        let source = cluster.nodes[0]
        let target = cluster.nodes[1]
        let sourceAddress = "127.0.0.1:\(source.port)"
        let keys: [String] = Array(
            (0..<100_000).lazy.map { "moving:\($0)" }.filter { RedisHashSlot.slot(for: $0) < 1500 }.prefix(600)
        )
        for key in keys { try await client.send(.set(key, value: RedisArgument(key))) }
        #expect(try await client.master(forKey: keys[0]) == sourceAddress)
        let load = LoadState()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<8 {
                group.addTask {
                    var index = caller
                    while load.running.load(ordering: .relaxed) {
                        let key = keys[index % keys.count]
                        do {
                            if index.isMultiple(of: 3) {
                                try await client.send(.set(key, value: RedisArgument(key)))
                            } else {
                                let reply = try await client.send(.get(key))
                                if reply.string != key { load.failures.withLock { $0.append("\(key): read \(reply)") } }
                            }
                            // A key that did not exist yet: written where the slot is now.
                            try await client.send(.set("fresh:{\(key)}:\(index)", value: "x", expiry: .seconds(60)))
                        } catch {
                            load.failures.withLock { $0.append("\(key): \(error)") }
                        }
                        load.finished(1)
                        index += 8
                    }
                }
            }
            group.addTask {
                defer { load.running.store(false, ordering: .relaxed) }
                // The load runs before, during and after the move: 200 operations before it
                // starts, and 200 more once every node agrees on the new map.
                await load.waitForOperations(200)
                try cluster.reshard(slots: 1500, from: source, to: target)
                try await cluster.waitUntilConsistent()
                await load.waitForOperations(load.operations.load(ordering: .relaxed) + 200)
            }
            try await group.waitForAll()
        }
        let failed = load.failures.withLock { $0 }
        #expect(failed.isEmpty, "\(failed.count) failed commands, first: \(failed.prefix(3))")
        #expect(load.operations.load(ordering: .relaxed) >= 400)
        let statistics = client.statistics
        print("reshard under load: \(load.operations.load(ordering: .relaxed)) operations, \(statistics)")
        #expect(statistics.moved > 0)
        // The client's map follows the move.
        for key in keys.prefix(20) { _ = try await client.send(.get(key)) }
        #expect(try await client.master(forKey: keys[0]) == "127.0.0.1:\(target.port)")
        let moved =
            Int(
                try target.cli(["CLUSTER", "COUNTKEYSINSLOT", String(RedisHashSlot.slot(for: keys[0]))])
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            ) ?? 0
        #expect(moved > 0)
    }
}

@Suite(
    "RedisClusterClient reading from replicas",
    .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed"),
    .timeLimit(.minutes(5))
)
struct RedisClusterReplicaTests {
    @Test("with readsFromReplicas, GETs go to replicas (READONLY) and writes to masters; off, replicas serve nothing")
    func readsFromReplicas() async throws {
        let cluster = try await RedisClusterProcesses.start(replicasPerMaster: 1)
        defer { cluster.stop() }
        let replicas = try cluster.replicas()
        try #require(replicas.count == 3)
        let masters = cluster.nodes.filter { node in !replicas.contains { $0 === node } }
        var configuration = cluster.seeds[0]
        configuration.readsFromReplicas = true
        let client = try RedisClusterClient(seeds: [configuration])
        let plain = try RedisClusterClient(seeds: [cluster.seeds[0]])
        defer {
            Task {
                await client.shutdown()
                await plain.shutdown()
            }
        }
        for index in 0..<100 { try await client.send(.set("key:\(index)", value: RedisArgument(index))) }
        // Replication is asynchronous: wait until every replica has its master's keys.
        try await eventually {
            try replicas.map { try Int($0.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
                .reduce(0, +) == 100
        }
        for node in cluster.nodes { try node.cli(["CONFIG", "RESETSTAT"]) }

        for index in 0..<100 { #expect(try await client.send(.get("key:\(index)")).integer == Int64(index)) }
        #expect(try await client.send(RedisCommand("EXISTS", "key:1", keyIndex: 1)).integer == 1)
        try await client.send(.set("key:written", value: "w"))
        for index in 0..<30 { _ = try await plain.send(.get("key:\(index)")) }

        let replicaGets = try replicas.map { try calls("get", on: $0) }
        let masterGets = try masters.map { try calls("get", on: $0) }
        #expect(replicaGets.reduce(0, +) == 100, "GETs per replica: \(replicaGets)")
        #expect(replicaGets.allSatisfy { $0 > 0 })
        #expect(masterGets.reduce(0, +) == 30, "the client without the option reads from masters: \(masterGets)")
        #expect(try masters.map { try calls("set", on: $0) }.reduce(0, +) == 1)
    }

    @Test("a read whose replica is gone goes to the master")
    func replicaDown() async throws {
        let cluster = try await RedisClusterProcesses.start(replicasPerMaster: 1)
        defer { cluster.stop() }
        var configuration = cluster.seeds[0]
        configuration.readsFromReplicas = true
        // Killed replicas refuse at once; the timeout is for handshakes on a loaded machine
        // (2 s was once too short in the full parallel suite).
        configuration.connectTimeout = .seconds(15)
        let client = try RedisClusterClient(seeds: [configuration])
        defer { Task { await client.shutdown() } }
        for index in 0..<30 { try await client.send(.set("key:\(index)", value: RedisArgument(index))) }
        for replica in try cluster.replicas() { replica.kill() }
        for index in 0..<30 { #expect(try await client.send(.get("key:\(index)")).integer == Int64(index)) }
    }

    private func calls(_ command: String, on node: RedisServerProcess) throws -> Int {
        let stats = try node.cli(["INFO", "commandstats"])
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):") }),
            let calls = line.split(separator: ",").first?.split(separator: "=").last
        else { return 0 }
        return Int(calls) ?? 0
    }
}

/// What the callers of a load test share.
final class LoadState: Sendable {
    let failures = Mutex<[String]>([])
    let operations = Atomic<Int>(0)
    let running = Atomic<Bool>(true)
    /// Those waiting for ``operations`` to reach a count, and the count each waits for.
    private let waiters = Mutex<[(count: Int, continuation: CheckedContinuation<Void, Never>)]>([])

    /// Counts `count` more finished operations and wakes those waiting for the total.
    func finished(_ count: Int) {
        let total = operations.add(count, ordering: .relaxed).newValue
        let due = waiters.withLock { waiters in
            let due = waiters.filter { $0.count <= total }
            waiters.removeAll { $0.count <= total }
            return due
        }
        for waiter in due { waiter.continuation.resume() }
    }

    /// Returns once `count` operations have finished.
    func waitForOperations(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let isDue = waiters.withLock { waiters in
                // `finished` counts before it takes this lock to look at the waiters: a count
                // lands before this read, or before that look.
                if operations.load(ordering: .relaxed) >= count { return true }
                waiters.append((count, continuation))
                return false
            }
            if isDue { continuation.resume() }
        }
    }
}
