import Logging
import NIOCore
import Synchronization
import Tracing

/// A client for a Redis Cluster: routes each command to the master that serves its key's slot,
/// follows `MOVED` and `ASK` redirections, and re-reads the slot map when the topology changes.
///
/// ```swift
/// let cluster = try RedisClusterClient(urls: ["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"])
/// try await cluster.send(.set("user:{42}:name", value: "Ada"))   // slot of "42"
/// ```
///
/// - The slot map comes from `CLUSTER SHARDS`, or `CLUSTER SLOTS` where `SHARDS` is unknown,
///   asked of any reachable node (seeds first). It is read on first use, after a `MOVED`, and
///   after a connection failure; concurrent refreshes share one request.
/// - `MOVED`: the slot is remembered at its new node and the command retried there. `ASK` (a
///   slot being migrated, e.g. by `redis-cli --cluster reshard`): `ASKING` and the command are
///   sent together to the target, without changing the map. `TRYAGAIN` and `CLUSTERDOWN` are
///   retried after a short pause. More than ``maximumRedirections`` hops fail with
///   `.tooManyRedirections`.
/// - Each node has its own pool with the seed configuration's credentials, TLS and limits.
/// - Commands without a key (``RedisCommand/keyIndex`` `nil`) go to any master.
/// - With ``RedisConfiguration/readsFromReplicas``, read-only commands go to a replica of the
///   slot's master (from the same slot map), falling back to the master.
public final class RedisClusterClient: RedisCommandExecuting {
    /// Redirections one command may follow.
    public let maximumRedirections = 16
    private let seeds: [RedisConfiguration]
    private let logger: Logger

    private struct State {
        var topology = RedisClusterTopology()
        var pools: [String: RedisConnectionPool] = [:]
        var refresh: Task<Void, any Error>?
        var isShutdown = false
    }

    private let state = Mutex(State())
    private let movedCount = Atomic<Int>(0)
    private let askCount = Atomic<Int>(0)
    private let refreshCount = Atomic<Int>(0)
    /// The subscriptions ``subscribe(to:)`` made, which ``shutdown()`` ends.
    let subscriptions = RedisSubscriptions()

    /// Redirections followed and slot-map reads since the client was created.
    public struct Statistics: Sendable, Hashable {
        /// `MOVED` replies followed (each updates the map).
        public var moved: Int
        /// `ASK` replies followed (slots being migrated).
        public var ask: Int
        /// Slot maps read (`CLUSTER SHARDS`/`SLOTS`).
        public var topologyRefreshes: Int
    }

    /// Redirections and refreshes so far.
    public var statistics: Statistics {
        Statistics(
            moved: movedCount.load(ordering: .relaxed),
            ask: askCount.load(ordering: .relaxed),
            topologyRefreshes: refreshCount.load(ordering: .relaxed)
        )
    }

    /// A client that discovers the cluster from `seeds` (one reachable node is enough).
    public init(seeds: [RedisConfiguration]) throws {
        guard let first = seeds.first else {
            throw RedisError(code: .invalidURL, message: "a cluster client needs at least one seed node")
        }
        self.seeds = seeds
        logger = first.logger
    }

    /// A client from seed URLs (`redis://host:port`, `rediss://…`), all with the same credentials.
    public convenience init(urls: [String]) throws {
        try self.init(seeds: urls.map { try RedisConfiguration(url: $0) })
    }

    /// Sends `command` to the node that serves its key's slot, following `MOVED` and `ASK`
    /// redirections, and returns the reply.
    @discardableResult
    public func send(_ command: RedisCommand) async throws -> RESPValue {
        try await seeds[0].activeTracer.withSpanIfTracing(RedisTracing.SpanName.command, ofKind: .client) { span in
            span.recordRedis([command], server: nil)
            return try await sendRedirected(command)
        }
    }

    /// ``send(_:)`` inside its span.
    private func sendRedirected(_ command: RedisCommand) async throws -> RESPValue {
        let slot = command.key.map { RedisHashSlot.slot(for: $0.readableBytesView) }
        var target = try await node(forSlot: slot)
        // A read may go to a replica once; anything unusual there sends it to the master.
        var onReplica = false
        if seeds[0].readsFromReplicas, command.isReadOnly, let slot,
            let replica = state.withLock({ $0.topology.replica(forSlot: slot) })
        {
            target = replica
            onReplica = true
        }
        var asking = false
        var lastError: RedisError?
        for attempt in 0...maximumRedirections {
            let reply: RESPValue
            do {
                let pool = try pool(for: target)
                reply = try await pool.withSharedConnection(exclusive: command.needsOwnConnection) { connection in
                    if asking {
                        return try await connection.pipeline([RedisCommand("ASKING"), command])[1]
                    }
                    return try await connection.sendRaw(command)
                }
            } catch let error as RedisError where onReplica {
                lastError = error
                onReplica = false
                scheduleRefresh()
                target = try await node(forSlot: slot)
                continue
            } catch let error as RedisError where error.code == .connectionFailed && attempt < 2 {
                // The node is gone (failover, removal): re-read the map and try where it points now.
                lastError = error
                try? await refreshTopology()
                target = try await node(forSlot: slot)
                asking = false
                continue
            }
            guard let message = reply.errorMessage else { return reply }
            if onReplica {
                // MOVED (the replica no longer serves the slot), LOADING (a full resync), …
                onReplica = false
                scheduleRefresh()
                target = try await node(forSlot: slot)
                continue
            }
            if let redirection = RedisClusterRedirection(message, askedHost: target.host) {
                let node = RedisClusterTopology.Node(host: redirection.host, port: redirection.port)
                switch redirection.kind {
                case .moved:
                    movedCount.add(1, ordering: .relaxed)
                    state.withLock { $0.topology.assign(redirection.slot...redirection.slot, to: node) }
                    scheduleRefresh()
                    asking = false
                case .ask:
                    askCount.add(1, ordering: .relaxed)
                    asking = true
                }
                target = node
                continue
            }
            let word = message.prefix { $0 != " " }
            if word == "TRYAGAIN" || word == "CLUSTERDOWN" {
                lastError = RedisError.serverError(message, command: command, server: target.address)
                try await seeds[0].backoffClock.sleep(for: .milliseconds(25 * (attempt + 1)))
                if word == "CLUSTERDOWN" { try? await refreshTopology() }
                target = try await node(forSlot: slot)
                asking = false
                continue
            }
            throw RedisError.serverError(message, command: command, server: target.address)
        }
        throw RedisError(
            code: .tooManyRedirections,
            message: "\(command) was redirected more than \(maximumRedirections) times; the cluster's slot map is "
                + "changing too fast or inconsistent (check `redis-cli --cluster check`)",
            cause: lastError
        )
    }

    /// Sends `commands` in one write when their keys share a slot (keyless commands go along);
    /// otherwise, and for any command redirected on the way, one by one through ``send(_:)``.
    /// Replies in order, error replies as values.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RESPValue] {
        try await seeds[0].activeTracer.withSpanIfTracing(RedisTracing.SpanName.pipeline, ofKind: .client) { span in
            span.recordRedis(commands, server: nil)
            return try await pipelineBySlot(commands)
        }
    }

    /// ``pipeline(_:)`` inside its span.
    private func pipelineBySlot(_ commands: [RedisCommand]) async throws -> [RESPValue] {
        let slots = Set(commands.compactMap { $0.key.map { RedisHashSlot.slot(for: $0.readableBytesView) } })
        var replies: [RESPValue]
        if slots.count <= 1 {
            let target = try await node(forSlot: slots.first)
            replies = try await pool(for: target).withSharedConnection(
                exclusive: commands.contains(where: \.needsOwnConnection)
            ) { try await $0.pipeline(commands) }
        } else {
            replies = Array(repeating: .null, count: commands.count)
            for index in commands.indices { replies[index] = try await sendCapturingErrors(commands[index]) }
            return replies
        }
        for index in replies.indices {
            guard let message = replies[index].errorMessage else { continue }
            let word = message.prefix { $0 != " " }
            if word == "MOVED" || word == "ASK" || word == "TRYAGAIN" || word == "CLUSTERDOWN" {
                replies[index] = try await sendCapturingErrors(commands[index])
            }
        }
        return replies
    }

    private func sendCapturingErrors(_ command: RedisCommand) async throws -> RESPValue {
        do {
            return try await send(command)
        } catch let error as RedisError where error.code == .server {
            return .simpleError(error.serverMessage ?? error.message)
        }
    }

    /// A subscription to `channels` on one node (cluster pub/sub reaches every node).
    public func subscribe(to channels: [String]) -> RedisSubscription {
        // PUBLISH reaches every node of a cluster, so one connection to any node hears everything.
        subscriptions.add(
            RedisSubscription(channels: channels, configuration: seeds[0]) { [self] in
                let known = state.withLock { $0.topology.nodes }
                return known.map { seeds[0].with(host: $0.host, port: $0.port) } + seeds
            }
        )
    }

    /// Re-reads the slot map now (concurrent calls share one request).
    public func refreshTopology() async throws {
        let task: Task<Void, any Error> = state.withLock { state in
            if let running = state.refresh { return running }
            let task = Task {
                defer { self.state.withLock { $0.refresh = nil } }
                let topology = try await self.readTopology()
                self.refreshCount.add(1, ordering: .relaxed)
                self.state.withLock { $0.topology = topology }
            }
            state.refresh = task
            return task
        }
        try await task.value
    }

    /// Addresses of the masters in the current slot map.
    public var masters: [String] { state.withLock { $0.topology.nodes.map(\.address) } }

    /// The master currently mapped for `key`'s slot, as `host:port`.
    public func master(forKey key: String) async throws -> String {
        try await node(forSlot: RedisHashSlot.slot(for: key)).address
    }

    /// Closes the connections to every node and ends every subscription. A connection a caller
    /// holds closes when the caller gives it back; ``run()`` waits for that too.
    public func shutdown() async {
        subscriptions.shutdown()
        for pool in shutDownPools() { await pool.shutdown() }
    }

    /// Marks the client shut down and returns its pools, for ``shutdown()`` and ``run()``.
    func shutDownPools() -> [RedisConnectionPool] {
        state.withLock { state in
            state.isShutdown = true
            return Array(state.pools.values)
        }
    }

    // MARK: - Routing

    private func node(forSlot slot: Int?) async throws -> RedisClusterTopology.Node {
        if let node = currentNode(forSlot: slot) { return node }
        try await refreshTopology()
        if let node = currentNode(forSlot: slot) { return node }
        throw RedisError(
            code: .clusterUnavailable,
            message:
                "no master serves slot \(slot ?? -1); the cluster is incomplete (check `redis-cli --cluster check`)"
        )
    }

    private func currentNode(forSlot slot: Int?) -> RedisClusterTopology.Node? {
        state.withLock { state in
            guard let slot else { return state.topology.nodes.randomElement() }
            return state.topology.node(forSlot: slot)
        }
    }

    private func pool(for node: RedisClusterTopology.Node) throws -> RedisConnectionPool {
        try state.withLock { state in
            guard !state.isShutdown else {
                throw RedisError(code: .shutdown, message: "the Redis cluster client was shut down")
            }
            if let pool = state.pools[node.address] { return pool }
            var configuration = seeds[0].with(host: node.host, port: node.port)
            configuration.database = 0
            // On every node, masters too: a replica may be promoted, and READONLY is harmless on a master.
            configuration.sendsReadOnly = configuration.readsFromReplicas
            let pool = RedisConnectionPool(configuration: configuration)
            state.pools[node.address] = pool
            return pool
        }
    }

    private func scheduleRefresh() {
        Task { try? await self.refreshTopology() }
    }

    /// Asks known masters, then seeds, until one answers with a map that covers slots.
    private func readTopology() async throws -> RedisClusterTopology {
        let known = state.withLock { $0.topology.nodes }
        let candidates = known + seeds.map { RedisClusterTopology.Node(host: $0.host, port: $0.port) }
        var failures: [String] = []
        var seen = Set<String>()
        for candidate in candidates where seen.insert(candidate.address).inserted {
            do {
                let pool = try pool(for: candidate)
                let usesTLS = seeds[0].tls != nil
                let topology = try await pool.withConnection { connection in
                    let shards = try await connection.sendRaw(RedisCommand("CLUSTER", "SHARDS"))
                    if shards.errorMessage == nil {
                        return try RedisClusterTopology.parse(
                            shards: shards,
                            askedHost: candidate.host,
                            usesTLS: usesTLS
                        )
                    }
                    let slots = try await connection.send(RedisCommand("CLUSTER", "SLOTS"))
                    return try RedisClusterTopology.parse(slots: slots, askedHost: candidate.host)
                }
                if topology.coveredSlots > 0 {
                    logger.debug(
                        "read the cluster's slot map",
                        metadata: ["from": "\(candidate.address)", "masters": "\(topology.nodes.count)"]
                    )
                    return topology
                }
                failures.append("\(candidate.address): no slots assigned")
            } catch {
                failures.append("\(candidate.address): \(error)")
            }
        }
        throw RedisError(
            code: .clusterUnavailable,
            message: "no cluster node returned a slot map (\(failures.joined(separator: "; ")))"
        )
    }
}
