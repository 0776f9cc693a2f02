import Foundation
import StowageRedis
import StowageTestSupport

/// A Redis Cluster of three masters (and optionally replicas) on free loopback ports, created
/// with `redis-cli --cluster create`, for tests.
public final class RedisClusterProcesses: Sendable {
    /// The cluster's servers, masters first.
    public let nodes: [RedisServerProcess]

    private init(nodes: [RedisServerProcess]) {
        self.nodes = nodes
    }

    /// Starts three `redis-server --cluster-enabled yes` (and `replicasPerMaster` replicas of
    /// each), joins them into one cluster with the 16384 slots split evenly, and waits until every
    /// node reports `cluster_state:ok` and every replica is in sync.
    public static func start(replicasPerMaster: Int = 0) async throws -> RedisClusterProcesses {
        var nodes: [RedisServerProcess] = []
        for _ in 0..<(3 * (1 + replicasPerMaster)) {
            nodes.append(
                try await RedisServerProcess.start(extraArguments: [
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "5000",
                ])
            )
        }
        let cluster = RedisClusterProcesses(nodes: nodes)
        try RedisServerProcess.run(
            "redis-cli",
            ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + [
                "--cluster-replicas", String(replicasPerMaster), "--cluster-yes",
            ]
        )
        try await cluster.waitUntilConsistent()
        return cluster
    }

    /// The nodes that are replicas now (`role:slave` in `INFO replication`).
    public func replicas() throws -> [RedisServerProcess] {
        try nodes.filter { try $0.cli(["INFO", "replication"]).contains("role:slave") }
    }

    /// Seed URLs.
    public var seeds: [RedisConfiguration] { nodes.map(\.configuration) }

    /// The node ID of `node` (`CLUSTER MYID`).
    public func nodeID(_ node: RedisServerProcess) throws -> String {
        try node.cli(["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Moves `slots` slots from `from` to `to` with `redis-cli --cluster reshard` (which runs
    /// `CLUSTER SETSLOT … MIGRATING/IMPORTING`, `MIGRATE` per key, then `SETSLOT … NODE`).
    public func reshard(slots: Int, from: RedisServerProcess, to: RedisServerProcess) throws {
        try RedisServerProcess.run(
            "redis-cli",
            [
                "--cluster", "reshard", "127.0.0.1:\(from.port)",
                "--cluster-from", try nodeID(from), "--cluster-to", try nodeID(to),
                "--cluster-slots", String(slots), "--cluster-yes", "--cluster-pipeline", "10",
            ]
        )
    }

    /// Waits until every node reports `cluster_state:ok` and agrees on the slot map: events of
    /// the servers' own (gossip, replication), which ``eventually`` waits for.
    public func waitUntilConsistent() async throws {
        do {
            try await eventually {
                let states = nodes.map { (try? $0.cli(["CLUSTER", "INFO"])) ?? "" }
                let replication = nodes.map { (try? $0.cli(["INFO", "replication"])) ?? "" }
                return states.allSatisfy({ $0.contains("cluster_state:ok") })
                    && replication.allSatisfy({ $0.contains("role:master") || $0.contains("master_link_status:up") })
                    && (try? RedisServerProcess.run("redis-cli", ["--cluster", "check", "127.0.0.1:\(nodes[0].port)"]))?
                        .contains("All 16384 slots covered") == true
            }
        } catch {
            throw TestFailure("the test cluster did not reach cluster_state:ok within 60 s")
        }
    }

    /// Stops every server and removes their directories.
    public func stop() {
        for node in nodes { node.remove() }
    }
}
