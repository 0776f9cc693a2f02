import Foundation
import Logging
import NIOCore
import StowageCache
import StowageCore
import StowageRedis
import Synchronization

/// A `SharedCacheTier` on Redis (or Valkey, or a Redis Cluster): the third level of a
/// `HybridCache` that a fleet of processes and machines shares.
///
/// ```swift
/// let tier = try await RedisSharedTier.connect(url: "redis://127.0.0.1:6379", namespace: "feeds")
/// let cache = HybridCache(memory: memory, disk: disk, serializer: JSONSerializer(Feed.self), shared: tier)
/// ```
///
/// Keys in Redis (`NS` is the namespace; the `{=key}` hash tag keeps a key's three entries in
/// one cluster slot so the lock scripts can touch them together):
/// - `NS:{=key}` — the value, in `SharedEntryFormat` (expiry header + bytes), with `PX` expiry;
/// - `NS:{=key}:lock` — the load lock: the fencing token, with the lease as `PX` expiry;
/// - `NS:{=key}:fence` — the last fencing token issued (`INCR`), kept a day after the last load.
///
/// Invalidations come from the server itself where it can (Redis ≥ 6 over RESP3, one server):
/// the tier's writes all go through one connection with `CLIENT TRACKING ON BCAST PREFIX NS:{=
/// NOLOOP`, and Redis pushes the keys that any *other* connection modified under the prefix to
/// that connection (`InvalidationTracker`), so a write costs no extra command. Where it
/// cannot — a RESP2 server, `CLIENT TRACKING` refused (Redis < 6, renamed or denied), a Redis
/// Cluster (tracking is per server) or ``InvalidationTransport/publish`` — the tier publishes:
/// a pub/sub message on `NS:invalidations` (node id and keys, see `InvalidationPublisher`)
/// after the write is acknowledged; a node ignores its own. Which one is in use is logged once
/// at notice level and shown by ``isTracking``.
///
/// Every node also subscribes to `NS:invalidations` in both modes, so a tracking node hears
/// nodes that publish (older versions, or ones configured with ``InvalidationTransport/publish``);
/// a publishing node does not hear a tracking one. To roll this version out over a fleet of
/// older nodes, start it with ``InvalidationTransport/publish`` and switch to `.automatic` once
/// every node runs it (or upgrade all nodes together).
///
/// Bans (``invalidate(keysWithPrefix:)``, e.g. an HTTP cache's ban by tag) are messages on
/// `NS:bans` in both modes: there is no write for the server to track.
///
/// With tracking, Redis also reports a value that expired or was evicted (`maxmemory`): other
/// nodes drop their copies of it, as for a removal. `FLUSHALL`/`FLUSHDB` arrive as
/// `SharedCacheInvalidation/emptied`, the same conclusion the publishing mode reaches from the
/// lost epoch after a gap: local copies stand until they expire.
///
/// When the channel or the tracking connection comes back after a gap, `NS:epoch` tells whether
/// the values outlived it (`SharedCacheInvalidation/all`) or were lost with the server
/// (`SharedCacheInvalidation/emptied`); see `RedisSharedTier+Epoch`.
///
/// The lock is the single-instance pattern from the Redis documentation's distributed-lock
/// page (`SET NX PX`, compare-and-delete in a script) with Kleppmann's fencing token (a counter
/// incremented per grant and checked by the write), so a loader whose lease ran out cannot
/// overwrite a newer value. It is not Redlock: with replicas, a failover may lose a lock; the
/// worst outcome is one more load, never a wrong value.
public final class RedisSharedTier: SharedCacheTier {
    /// How a node tells the others what it wrote.
    public enum InvalidationTransport: Sendable, Hashable {
        /// Server-assisted tracking (`CLIENT TRACKING … BCAST … NOLOOP`) when the client is a
        /// `RedisClient` whose server speaks RESP3 and accepts it; `PUBLISH` otherwise.
        case automatic
        /// Always `PUBLISH` on `NS:invalidations`, as versions before tracking did: for a fleet
        /// that still runs such versions.
        case publish
    }

    /// The client the tier talks through.
    public let client: any RedisCommandExecuting
    /// Prefix of every key and channel, so several caches share one Redis.
    public let namespace: String
    /// Identifies this node in invalidation messages.
    public let nodeID: String
    let channel: String
    /// Where bans (prefix invalidations) are published: `NS:bans`.
    let banChannel: String
    private let subscription: RedisSubscription
    let tracker: InvalidationTracker?
    let echoes = OwnWriteEchoes()
    let listeners = Mutex<[UUID: AsyncStream<SharedCacheInvalidation>.Continuation]>([:])
    /// Every invalidation source is up (subscription confirmed; tracking on or unavailable).
    let ready = Atomic<Bool>(false)
    /// Wakes ``waitUntilSubscribed(timeout:clock:)`` when ``ready`` turns `true`.
    let readiness = ReadinessSignal()
    /// The pauses between attempts to read the epoch after a gap (``Options/probeClock``).
    let probeClock: ElapsedClock
    /// The wall clock entry expiries are written and read by (``Options/entryClock``).
    let entryClock: CacheClock
    let pump = Mutex<[Task<Void, Never>]>([])
    let signals: AsyncStream<InvalidationSignal>
    let logger: Logger
    private let publisher: InvalidationPublisher
    /// Bounds each call by ``Options/requestBudget`` and fails calls at once while Redis does not
    /// answer.
    let breaker: CircuitBreaker

    /// A tier over `client`; it subscribes to invalidations, and opens its tracking connection,
    /// at once.
    ///
    /// - Parameters:
    ///   - client: The client (standalone or cluster) the tier's reads and scripts use.
    ///   - namespace: Key prefix; letters, digits, `.`, `-`, `_`, `:` (no `{`, which would break
    ///     the cluster hash tag).
    ///   - invalidations: ``InvalidationTransport/automatic`` (the default) tracks where the
    ///     server can; ``InvalidationTransport/publish`` always publishes.
    ///   - options: The request budget and the circuit breaker's probes; see ``Options``.
    ///   - logger: Where the tier logs; silent when `nil`.
    /// - Throws: `RedisError` `.invalidURL` for a bad namespace; `StowageError`
    ///   `.invalidConfiguration` for options out of range (``Options/validate()``).
    public init(
        client: any RedisCommandExecuting,
        namespace: String = "stowage",
        invalidations: InvalidationTransport = .automatic,
        options: Options = Options(),
        logger: Logger? = nil
    ) throws {
        try options.validate()
        guard !namespace.isEmpty,
            namespace.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-_:".contains($0)) })
        else {
            throw RedisError(
                code: .invalidURL,
                message: "namespace '\(namespace)' may hold only ASCII letters, digits, '.', '-', '_' and ':'"
            )
        }
        self.client = client
        self.namespace = namespace
        probeClock = ElapsedClock(options.probeClock)
        entryClock = options.entryClock
        nodeID = UUID().uuidString
        channel = "\(namespace):invalidations"
        banChannel = "\(namespace):bans"
        self.logger = logger ?? Logger(label: "org.stowage.shared-tier", factory: SwiftLogNoOpLogHandler.init)
        publisher = InvalidationPublisher(client: client, channel: channel, nodeID: nodeID, logger: self.logger)
        breaker = CircuitBreaker(options: options, logger: self.logger) {
            _ = try await client.send(RedisCommand("PING"))
        }
        let (signals, signal) = AsyncStream.makeStream(of: InvalidationSignal.self)
        self.signals = signals
        if invalidations == .automatic, let single = client as? RedisClient {
            tracker = InvalidationTracker(configuration: single.connectionConfiguration, prefix: "\(namespace):{=") {
                signal.yield(.tracker($0))
            }
        } else {
            tracker = nil
        }
        subscription = client.subscribe(to: [channel, banChannel])
        startPump(subscription: subscription, signal: signal, transport: invalidations)
        tracker?.start()
    }

    /// Connects to `url` (`redis://` or `rediss://`): a Redis Cluster node (`cluster_enabled:1`
    /// in `INFO cluster`) gives a `RedisClusterClient` seeded with it, any other server a
    /// `RedisClient`.
    ///
    /// - Parameters:
    ///   - url: The server's URL: `redis://[[user]:password@]host[:port][/db][?protocol=2|3]`.
    ///   - namespace: Key prefix; see ``init(client:namespace:invalidations:options:logger:)``.
    ///   - invalidations: See ``init(client:namespace:invalidations:options:logger:)``.
    ///   - options: The request budget and the circuit breaker's probes; see ``Options``.
    ///   - configure: Adjusts the configuration before connecting (trust roots, pool size,
    ///     timeouts, the logger — which the tier logs to as well); what it throws is rethrown.
    /// - Throws: `RedisError` when the URL is bad or the server cannot be asked.
    public static func connect(
        url: String,
        namespace: String = "stowage",
        invalidations: InvalidationTransport = .automatic,
        options: Options = Options(),
        configure: (inout RedisConfiguration) throws -> Void = { _ in }
    ) async throws -> RedisSharedTier {
        try options.validate()
        var configuration = try RedisConfiguration(url: url)
        try configure(&configuration)
        // Asking what the server is belongs to connecting: a short command timeout (one chosen to
        // give up on writes quickly) must not fail the connection on a busy machine.
        var probeConfiguration = configuration
        probeConfiguration.commandTimeout = max(configuration.commandTimeout, configuration.connectTimeout)
        let probe = RedisClient(configuration: probeConfiguration)
        let info: String
        do {
            info = try await probe.send(RedisCommand("INFO", "cluster")).string ?? ""
        } catch {
            await probe.shutdown()
            throw error
        }
        await probe.shutdown()
        if info.contains("cluster_enabled:1") {
            return try RedisSharedTier(
                client: RedisClusterClient(seeds: [configuration]),
                namespace: namespace,
                invalidations: invalidations,
                options: options,
                logger: configuration.logger
            )
        }
        return try RedisSharedTier(
            client: RedisClient(configuration: configuration),
            namespace: namespace,
            invalidations: invalidations,
            options: options,
            logger: configuration.logger
        )
    }

    /// Waits until invalidations flow — the subscription is confirmed and tracking is on (or
    /// known to be unavailable) — and returns `false` if `timeout` passes first. A node that must
    /// not miss an invalidation from the start (tests, benchmarks) calls this.
    ///
    /// - Parameters:
    ///   - timeout: The longest wait.
    ///   - clock: What `timeout` is measured by. Default `ContinuousClock()`; a test passes a
    ///     clock it advances.
    public func waitUntilSubscribed(
        timeout: Duration = .seconds(5),
        clock: any Clock<Duration> = ContinuousClock()
    ) async -> Bool {
        let elapsed = ElapsedClock(clock)
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.readiness.wait { self.ready.load(ordering: .acquiring) }
                return !Task.isCancelled
            }
            group.addTask {
                try? await elapsed.sleep(until: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || ready.load(ordering: .acquiring)
        }
    }

    /// Whether the server tracks this node's writes now: `true` while the tracking connection is
    /// open with tracking on, `false` when the node publishes (fallback, cluster,
    /// ``InvalidationTransport/publish``) or its tracking connection is being re-established
    /// (its writes then go through the pool and are published too).
    public var isTracking: Bool { tracker?.connection != nil }

    /// Stops the subscription and the tracking connection, and closes the client's connections.
    public func shutdown() async {
        subscription.cancel()
        tracker?.cancel()
        breaker.cancel()
        for task in pump.withLock({ $0 }) { task.cancel() }
        let continuations = listeners.withLock { listeners in
            defer { listeners.removeAll() }
            return Array(listeners.values)
        }
        for continuation in continuations { continuation.finish() }
        await client.shutdown()
    }

    // A tier dropped without shutdown() must not keep reconnecting its tracking connection (the
    // subscription stops itself the same way).
    deinit {
        tracker?.cancel()
        breaker.cancel()
    }

    /// Whether the circuit breaker is open: Redis did not answer a recent call within
    /// ``Options/requestBudget`` (or could not be reached), so calls fail at once until a
    /// background probe gets an answer.
    public var isCircuitOpen: Bool { breaker.isOpen }

    // MARK: - Keys

    func valueKey(_ key: String) -> String { "\(namespace):{=\(key)}" }
    func lockKey(_ key: String) -> String { "\(namespace):{=\(key)}:lock" }
    func fenceKey(_ key: String) -> String { "\(namespace):{=\(key)}:fence" }

    // MARK: - SharedCacheTier

    /// The entry stored for `key`, or `nil` when Redis has none (or bytes of another format).
    public func entry(forKey key: String) async throws -> SharedCacheEntry? {
        let reply = try await breaker.run("GET") { try await self.client.send(.get(self.valueKey(key))) }
        guard let bytes = reply.bytes, let decoded = SharedEntryFormat.decode(bytes, now: entryClock.now()) else {
            return nil
        }
        return SharedCacheEntry(data: decoded.data, timeToLive: decoded.timeToLive.map(Duration.timeInterval))
    }

    /// Stores `data` for `key` with `timeToLive` as its Redis expiry; the other nodes hear of it
    /// (tracked by the server, or published).
    public func setData(_ data: Data, forKey key: String, timeToLive: Duration?) async throws {
        let timeToLive = timeToLive.map(Self.bounded)
        let entry = SharedEntryFormat.encode(data, timeToLive: timeToLive?.timeInterval, now: entryClock.now())
        try await breaker.run("SET") {
            let (_, isTracked) = try await self.write(
                .set(self.valueKey(key), value: RedisArgument(entry), expiry: timeToLive),
                key: key,
                leaving: entry
            )
            if !isTracked { self.publisher.publish(key) }
        }
    }

    /// Removes `key` from Redis; the other nodes hear of it whatever Redis held: besides the
    /// `DEL`, the key is published when the server did not track the write (or the `DEL`
    /// removed nothing, so tracking reports nothing) and logged in `NS:purges` for nodes that
    /// were not listening. A removal Redis did not take throws; the caches above keep it in
    /// their outage queue (`PendingSharedWrites`) and send it when Redis answers again.
    public func removeData(forKey key: String) async throws {
        try await breaker.run("DEL") {
            let (reply, isTracked) = try await self.write(.del(self.valueKey(key)), key: key, leaving: nil)
            if !isTracked || reply.integer == 0 { self.publisher.publish(key) }
            try await self.logPurge(.key(key))
        }
    }

    /// A new stream of the invalidations the other nodes cause (never this node's own writes);
    /// it ends when the tier shuts down.
    public func invalidations() -> AsyncStream<SharedCacheInvalidation> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: SharedCacheInvalidation.self,
            bufferingPolicy: .bufferingNewest(100_000)
        )
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    /// Takes `key`'s load lock for `lease`, with a fencing token greater than any before; `nil`
    /// when another node holds it or a value is already there.
    public func lockForLoading(key: String, lease: Duration) async throws -> SharedCacheLoadLock? {
        // Lock and fence keys are no values: their invalidations are ignored, so the pool will do.
        let reply = try await breaker.run("lock") {
            try await self.client.send(
                .eval(
                    RedisLockScripts.acquire,
                    keys: [self.lockKey(key), self.fenceKey(key), self.valueKey(key)],
                    arguments: [RedisArgument(max(1, Self.milliseconds(lease)))]
                )
            )
        }
        guard let token = reply.integer, token > 0 else { return nil }
        return SharedCacheLoadLock(key: key, fencingToken: token)
    }

    /// Whether a node holds `key`'s load lock now.
    public func isLockedForLoading(key: String) async throws -> Bool {
        try await breaker.run("EXISTS") {
            try await self.client.send(RedisCommand("EXISTS", RedisArgument(self.lockKey(key)), keyIndex: 1))
        }.integer == 1
    }

    /// Stores `data` for `key` only while `lock` is still the latest granted for it (a fenced
    /// set), and releases the lock; `false` when a newer holder has taken over.
    public func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration?,
        releasing lock: SharedCacheLoadLock
    ) async throws -> Bool {
        let stored = try await breaker.run("fenced set") {
            try await self.fencedSet(data, forKey: key, timeToLive: timeToLive, releasing: lock)
        }
        return stored
    }

    private func fencedSet(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration?,
        releasing lock: SharedCacheLoadLock
    ) async throws -> Bool {
        let timeToLive = timeToLive.map(Self.bounded)
        let entry = SharedEntryFormat.encode(data, timeToLive: timeToLive?.timeInterval, now: entryClock.now())
        // Echoed on either path: as a script's write, or as the pool's (see OwnWriteEchoes).
        let tracked = tracker != nil
        if tracked { echoes.expect(entry, forKey: key) }
        let reply: RESPValue
        let isTracked: Bool
        do {
            (reply, isTracked) = try await trackedWrite(
                .eval(
                    RedisLockScripts.fencedSet,
                    keys: [valueKey(key), lockKey(key)],
                    arguments: [
                        RedisArgument(String(lock.fencingToken)), RedisArgument(entry),
                        RedisArgument(timeToLive.map { max(1, Self.milliseconds($0)) } ?? 0),
                    ]
                )
            )
        } catch {
            if tracked { echoes.withdraw(entry, forKey: key) }
            throw error
        }
        guard reply.integer == 1 else {
            if tracked { echoes.withdraw(entry, forKey: key) }
            return false
        }
        if !isTracked { publisher.publish(key) }
        return true
    }

    /// Publishes the ban on `NS:bans` (node id and prefix, in `InvalidationPublisher`'s
    /// format); every other node hears it as `SharedCacheInvalidation/prefix(_:)`, in both
    /// invalidation modes, and a node that was not listening reads it from `NS:purges`. Nothing
    /// in Redis is removed by it. A ban Redis did not take throws; the caches above keep it in
    /// their outage queue and send it when Redis answers again.
    public func invalidate(keysWithPrefix prefix: String) async throws {
        let message = InvalidationPublisher.encode(nodeID: nodeID, keys: [prefix])
        try await breaker.run("ban") {
            try await self.client.send(.publish(self.banChannel, message: RedisArgument(message)))
            try await self.logPurge(.prefix(prefix))
        }
    }

    /// Releases `lock` unless a newer holder has taken `key`'s lock since.
    public func unlock(_ lock: SharedCacheLoadLock) async throws {
        try await breaker.run("unlock") {
            try await self.client.send(
                .eval(
                    RedisLockScripts.release,
                    keys: [self.lockKey(lock.key)],
                    arguments: [RedisArgument(String(lock.fencingToken))]
                )
            )
        }
    }

    // MARK: - Writes

    /// Sends a write of `key` that leaves `entry` in Redis (`nil`: removes it) on the tracking
    /// connection when it is open (the server then tells the other nodes), otherwise through the
    /// pool. Returns the reply and whether the write was tracked (the caller publishes otherwise).
    private func write(
        _ command: RedisCommand,
        key: String,
        leaving entry: ByteBuffer?
    ) async throws -> (RESPValue, isTracked: Bool) {
        try await trackedWrite(command) {
            // The server may already track for a tracking connection still being set up.
            guard self.tracker != nil else { return nil }
            self.echoes.expect(entry, forKey: key)
            return { self.echoes.withdraw(entry, forKey: key) }
        }
    }

    /// The reply, and whether the write went through the tracking connection. A write that the
    /// closing connection could not send goes through the pool instead; `beforePool` runs
    /// first and returns what undoes it should the pool's send fail.
    private func trackedWrite(
        _ command: RedisCommand,
        beforePool: () -> (() -> Void)? = { nil }
    ) async throws -> (RESPValue, isTracked: Bool) {
        if let connection = tracker?.connection {
            do {
                return (try await connection.send(command), true)
            } catch let error as RedisError where error.wasNotSent {}
        }
        let undo = beforePool()
        do {
            return (try await client.send(command), false)
        } catch {
            undo?()
            throw error
        }
    }

    /// Whole milliseconds of `duration` (rounded up), at most ``longestDuration``'s.
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = bounded(duration).components
        return Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// The longest time-to-live or load-lock lease sent to Redis, 100 years: a longer one is
    /// kept this long. Redis refuses an expiry past its millisecond clock's range ("invalid
    /// expire time"), and `Duration.seconds(Int64.max)` in milliseconds overflows `Int` (and the
    /// entry header's `Int64` expiry), which trapped the process on a caller's "forever".
    static let longestDuration = Duration.seconds(100 * 365 * 86_400)

    /// `duration`, at most ``longestDuration``.
    static func bounded(_ duration: Duration) -> Duration { min(duration, longestDuration) }
}
