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

    init() {
        slots = Array(repeating: -1, count: RedisHashSlot.count)
        nodes = []
    }

    func node(forSlot slot: Int) -> Node? {
        let index = slots[slot]
        return index >= 0 ? nodes[Int(index)] : nil
    }

    mutating func assign(_ range: ClosedRange<Int>, to node: Node) {
        let index: Int
        if let existing = nodes.firstIndex(of: node) {
            index = existing
        } else {
            nodes.append(node)
            index = nodes.count - 1
        }
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
            let port = (usesTLS ? master[field: "tls-port"]?.integer : nil) ?? master[field: "port"]?.integer
            guard let port else { throw malformed("CLUSTER SHARDS", master) }
            var host = master[field: "endpoint"]?.string ?? ""
            if host.isEmpty || host == "?" { host = master[field: "ip"]?.string ?? "" }
            if host.isEmpty || host == "?" { host = askedHost }
            let node = Node(host: host, port: Int(port))
            for pair in stride(from: 0, to: slotBounds.count - 1, by: 2) {
                topology.assign(Int(slotBounds[pair])...Int(slotBounds[pair + 1]), to: node)
            }
        }
        return topology
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
            topology.assign(Int(start)...Int(end), to: Node(host: host, port: Int(port)))
        }
        return topology
    }

    private static func malformed(_ command: String, _ value: RESPValue) -> RedisError {
        RedisError(
            code: .clusterUnavailable,
            message: "unexpected \(command) reply \(String(describing: value).prefix(200)); is this a Redis Cluster node?"
        )
    }
}
