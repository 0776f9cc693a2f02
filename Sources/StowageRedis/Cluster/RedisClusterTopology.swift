/// Which master serves each of the 16384 slots, read from `CLUSTER SHARDS` (Redis 7+) or
/// `CLUSTER SLOTS` (older servers and RESP-compatible servers without `SHARDS`).
struct RedisClusterTopology: Sendable, Equatable {
    struct Node: Sendable, Hashable {
        var host: String
        var port: Int
        var address: String { "\(host):\(port)" }
    }

    /// Index into ``nodes`` per slot; `-1` where no master serves the slot.
    var slots: [Int16]
    var nodes: [Node]
    /// The online replicas of each master in ``nodes``, at the same index.
    var replicas: [[Node]]

    init() {
        slots = Array(repeating: -1, count: RedisHashSlot.count)
        nodes = []
        replicas = []
    }

    func node(forSlot slot: Int) -> Node? {
        let index = slots[slot]
        return index >= 0 ? nodes[Int(index)] : nil
    }

    /// A replica of the slot's master, picked at random; `nil` when it has none.
    func replica(forSlot slot: Int) -> Node? {
        let index = slots[slot]
        return index >= 0 ? replicas[Int(index)].randomElement() : nil
    }

    /// Maps `range` to `node`; `replicas`, when given, replace the node's known replicas.
    mutating func assign(_ range: ClosedRange<Int>, to node: Node, replicas nodeReplicas: [Node]? = nil) {
        let index: Int
        if let existing = nodes.firstIndex(of: node) {
            index = existing
        } else {
            nodes.append(node)
            replicas.append([])
            index = nodes.count - 1
        }
        if let nodeReplicas { replicas[index] = nodeReplicas }
        for slot in range where (0..<RedisHashSlot.count).contains(slot) { slots[slot] = Int16(index) }
    }

    var coveredSlots: Int { slots.count { $0 >= 0 } }

    /// Parses a `CLUSTER SHARDS` reply (RESP3 maps or RESP2 flat key/value arrays).
    ///
    /// - Parameters:
    ///   - askedHost: The host the reply came from, for nodes that announce no endpoint (`?`).
    ///   - usesTLS: Whether to take each node's `tls-port` over its `port`.
    static func parse(shards reply: RESPValue, askedHost: String, usesTLS: Bool) throws -> RedisClusterTopology {
        guard let shards = reply.elements else { throw malformed("CLUSTER SHARDS", reply) }
        var topology = RedisClusterTopology()
        for shard in shards {
            guard let slotBounds = shard[field: "slots"]?.elements?.compactMap(\.integer),
                let nodes = shard[field: "nodes"]?.elements
            else { throw malformed("CLUSTER SHARDS", shard) }
            let master = nodes.first { node in
                node[field: "role"]?.string == "master" && (node[field: "health"]?.string ?? "online") == "online"
            }
            guard let master else { continue }
            let node = try address(of: master, askedHost: askedHost, usesTLS: usesTLS)
            // A replica reads "loading" until it has acknowledged a replication offset, which an
            // idle new cluster never has; one still loading answers -LOADING and the read goes to
            // the master.
            let replicas = try nodes.filter { node in
                node[field: "role"]?.string == "replica" && node[field: "health"]?.string != "fail"
            }.map {
                try address(of: $0, askedHost: askedHost, usesTLS: usesTLS)
            }
            for pair in stride(from: 0, to: slotBounds.count - 1, by: 2) {
                topology.assign(Int(slotBounds[pair])...Int(slotBounds[pair + 1]), to: node, replicas: replicas)
            }
        }
        return topology
    }

    private static func address(of node: RESPValue, askedHost: String, usesTLS: Bool) throws -> Node {
        let port = (usesTLS ? node[field: "tls-port"]?.integer : nil) ?? node[field: "port"]?.integer
        guard let port else { throw malformed("CLUSTER SHARDS", node) }
        var host = node[field: "endpoint"]?.string ?? ""
        if host.isEmpty || host == "?" { host = node[field: "ip"]?.string ?? "" }
        if host.isEmpty || host == "?" { host = askedHost }
        return Node(host: host, port: Int(port))
    }

    /// Parses a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id, …], replicas…], …]`.
    static func parse(slots reply: RESPValue, askedHost: String) throws -> RedisClusterTopology {
        guard let ranges = reply.elements else { throw malformed("CLUSTER SLOTS", reply) }
        var topology = RedisClusterTopology()
        for range in ranges {
            guard let parts = range.elements, parts.count >= 3,
                let start = parts[0].integer, let end = parts[1].integer, start <= end,
                let master = parts[2].elements, master.count >= 2, let port = master[1].integer
            else { throw malformed("CLUSTER SLOTS", range) }
            var host = master[0].string ?? ""
            if host.isEmpty || host == "?" { host = askedHost }
            let replicas = parts.dropFirst(3).compactMap { replica -> Node? in
                guard let fields = replica.elements, fields.count >= 2, let port = fields[1].integer else { return nil }
                let host = fields[0].string ?? ""
                return Node(host: host.isEmpty || host == "?" ? askedHost : host, port: Int(port))
            }
            topology.assign(Int(start)...Int(end), to: Node(host: host, port: Int(port)), replicas: replicas)
        }
        return topology
    }

    private static func malformed(_ command: String, _ value: RESPValue) -> RedisError {
        RedisError(
            code: .clusterUnavailable,
            message:
                "unexpected \(command) reply \(String(describing: value).prefix(200)); is this a Redis Cluster node?"
        )
    }
}
