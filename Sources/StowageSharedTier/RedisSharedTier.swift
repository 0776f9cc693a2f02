import Foundation
import Logging
import NIOCore
import StowageCache
import StowageRedis
import Synchronization

/// A ``SharedCacheTier`` on Redis (or Valkey, or a Redis Cluster): the third level of a
/// ``HybridCache`` that a fleet of processes and machines shares.
///
/// ```swift
/// let tier = try await RedisSharedTier.connect(url: "redis://127.0.0.1:6379", namespace: "feeds")
/// let cache = HybridCache(memory: memory, disk: disk, serializer: JSONSerializer(Feed.self), shared: tier)
/// ```
///
/// Keys in Redis (`NS` is the namespace; the `{=key}` hash tag keeps a key's three entries in
/// one cluster slot so the lock scripts can touch them together):
/// - `NS:{=key}` — the value, in ``SharedEntryFormat`` (expiry header + bytes), with `PX` expiry;
/// - `NS:{=key}:lock` — the load lock: the fencing token, with the lease as `PX` expiry;
/// - `NS:{=key}:fence` — the last fencing token issued (`INCR`), kept a day after the last load.
///
/// Invalidations are pub/sub messages on `NS:invalidations` (node id and keys, see
/// ``InvalidationPublisher``), sent after the write is acknowledged; a node ignores its own.
/// Every node subscribes when the tier is created (``waitUntilSubscribed(timeout:)``). In a
/// cluster, `PUBLISH` reaches subscribers on every node. When the channel comes back after a
/// gap, `NS:epoch` tells whether the values outlived it (``SharedCacheInvalidation/all``) or
/// were lost with the server (``SharedCacheInvalidation/emptied``); see `RedisSharedTier+Epoch`.
///
/// The lock is the single-instance pattern from the Redis documentation's distributed-lock
/// page (`SET NX PX`, compare-and-delete in a script) with Kleppmann's fencing token (a counter
/// incremented per grant and checked by the write), so a loader whose lease ran out cannot
/// overwrite a newer value. It is not Redlock: with replicas, a failover may lose a lock; the
/// worst outcome is one more load, never a wrong value.
public final class RedisSharedTier: SharedCacheTier {
    /// The client the tier talks through.
    public let client: any RedisCommandExecuting
    /// Prefix of every key and channel, so several caches share one Redis.
    public let namespace: String
    /// Identifies this node in invalidation messages.
    public let nodeID: String
    private let channel: String
    private let subscription: RedisSubscription
    private let listeners = Mutex<[UUID: AsyncStream<SharedCacheInvalidation>.Continuation]>([:])
    private let subscribed = Atomic<Bool>(false)
    private let pump = Mutex<Task<Void, Never>?>(nil)
    private let logger: Logger
    private let publisher: InvalidationPublisher

    /// A tier over `client`; it subscribes to invalidations at once.
    ///
    /// - Parameters:
    ///   - namespace: Key prefix; letters, digits, `.`, `-`, `_`, `:` (no `{`, which would break
    ///     the cluster hash tag).
    /// - Throws: ``RedisError`` `.invalidURL` for a bad namespace.
    public init(client: any RedisCommandExecuting, namespace: String = "stowage", logger: Logger? = nil) throws {
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
        nodeID = UUID().uuidString
        channel = "\(namespace):invalidations"
        self.logger = logger ?? Logger(label: "stowage.shared-tier")
        publisher = InvalidationPublisher(client: client, channel: channel, nodeID: nodeID, logger: self.logger)
        subscription = client.subscribe(to: [channel])
        startPump()
    }

    /// Connects to `url` (`redis://` or `rediss://`): a Redis Cluster node (`cluster_enabled:1`
    /// in `INFO cluster`) gives a ``RedisClusterClient`` seeded with it, any other server a
    /// ``RedisClient``.
    ///
    /// - Parameter configure: Adjusts the configuration before connecting (trust roots, pool
    ///   size, timeouts); what it throws is rethrown.
    /// - Throws: ``RedisError`` when the URL is bad or the server cannot be asked.
    public static func connect(
        url: String,
        namespace: String = "stowage",
        configure: (inout RedisConfiguration) throws -> Void = { _ in }
    ) async throws -> RedisSharedTier {
        var configuration = try RedisConfiguration(url: url)
        try configure(&configuration)
        let single = RedisClient(configuration: configuration)
        let info = try await single.send(RedisCommand("INFO", "cluster")).string ?? ""
        if info.contains("cluster_enabled:1") {
            await single.shutdown()
            return try RedisSharedTier(client: RedisClusterClient(seeds: [configuration]), namespace: namespace)
        }
        return try RedisSharedTier(client: single, namespace: namespace)
    }

    /// Waits until the invalidation subscription is confirmed; `false` if `timeout` passes first.
    /// A node that must not miss an invalidation from the start (tests, benchmarks) calls this.
    public func waitUntilSubscribed(timeout: Duration = .seconds(5)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if subscribed.load(ordering: .acquiring) { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return subscribed.load(ordering: .acquiring)
    }

    /// Stops the subscription and closes the client's connections.
    public func shutdown() async {
        subscription.cancel()
        pump.withLock { $0?.cancel() }
        let continuations = listeners.withLock { listeners in
            defer { listeners.removeAll() }
            return Array(listeners.values)
        }
        for continuation in continuations { continuation.finish() }
        await client.shutdown()
    }

    // MARK: - Keys

    func valueKey(_ key: String) -> String { "\(namespace):{=\(key)}" }
    func lockKey(_ key: String) -> String { "\(namespace):{=\(key)}:lock" }
    func fenceKey(_ key: String) -> String { "\(namespace):{=\(key)}:fence" }

    // MARK: - SharedCacheTier

    public func entry(forKey key: String) async throws -> SharedCacheEntry? {
        let reply = try await client.send(.get(valueKey(key)))
        guard let bytes = reply.bytes, let decoded = SharedEntryFormat.decode(bytes) else { return nil }
        return SharedCacheEntry(data: decoded.data, timeToLive: decoded.timeToLive)
    }

    public func setData(_ data: Data, forKey key: String, timeToLive: TimeInterval?) async throws {
        let entry = SharedEntryFormat.encode(data, timeToLive: timeToLive)
        try await client.send(.set(valueKey(key), value: RedisArgument(entry), expiry: timeToLive.map(Self.duration)))
        publisher.publish(key)
    }

    public func removeData(forKey key: String) async throws {
        try await client.send(.del(valueKey(key)))
        publisher.publish(key)
    }


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

    public func lockForLoading(key: String, lease: Duration) async throws -> SharedCacheLoadLock? {
        let reply = try await client.send(
            .eval(
                RedisLockScripts.acquire,
                keys: [lockKey(key), fenceKey(key), valueKey(key)],
                arguments: [RedisArgument(max(1, Self.milliseconds(lease)))]
            )
        )
        guard let token = reply.integer, token > 0 else { return nil }
        return SharedCacheLoadLock(key: key, fencingToken: token)
    }

    public func isLockedForLoading(key: String) async throws -> Bool {
        try await client.send(RedisCommand("EXISTS", RedisArgument(lockKey(key)), keyIndex: 1)).integer == 1
    }

    public func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: TimeInterval?,
        releasing lock: SharedCacheLoadLock
    ) async throws -> Bool {
        let entry = SharedEntryFormat.encode(data, timeToLive: timeToLive)
        let reply = try await client.send(
            .eval(
                RedisLockScripts.fencedSet,
                keys: [valueKey(key), lockKey(key)],
                arguments: [
                    RedisArgument(String(lock.fencingToken)), RedisArgument(entry),
                    RedisArgument(timeToLive.map { max(1, Self.milliseconds(Self.duration($0))) } ?? 0),
                ]
            )
        )
        guard reply.integer == 1 else { return false }
        publisher.publish(key)
        return true
    }

    public func unlock(_ lock: SharedCacheLoadLock) async throws {
        try await client.send(
            .eval(RedisLockScripts.release, keys: [lockKey(lock.key)], arguments: [RedisArgument(String(lock.fencingToken))])
        )
    }

    // MARK: - Invalidations


    private func startPump() {
        let events = subscription.events
        let task = Task { [weak self] in
            var hadGap = false
            var knownEpoch: String?
            for await event in events {
                guard let self else { return }
                switch event {
                case .subscribed:
                    if hadGap {
                        let (invalidation, epoch) = await invalidationAfterGap(knownEpoch: knownEpoch)
                        knownEpoch = epoch
                        if invalidation == .emptied {
                            logger.notice(
                                "the shared level lost its values (restarted empty or flushed); keeping local copies"
                            )
                        } else {
                            logger.notice("invalidation channel back; dropping memory copies, confirming disk copies")
                        }
                        broadcast(invalidation)
                        hadGap = false
                    } else if knownEpoch == nil {
                        knownEpoch = try? await currentEpoch()
                    }
                    subscribed.store(true, ordering: .releasing)
                case .disconnected:
                    if subscribed.exchange(false, ordering: .acquiringAndReleasing) || !hadGap {
                        hadGap = true
                    }
                case .message(_, let payload):
                    guard let (sender, keys) = InvalidationPublisher.decode(payload) else {
                        logger.warning("ignoring a malformed invalidation message", metadata: ["channel": "\(channel)"])
                        continue
                    }
                    if sender == nodeID { continue }
                    for key in keys { broadcast(.key(key)) }
                }
            }
        }
        pump.withLock { $0 = task }
    }

    private func broadcast(_ invalidation: SharedCacheInvalidation) {
        let continuations = listeners.withLock { Array($0.values) }
        for continuation in continuations { continuation.yield(invalidation) }
    }

    static func duration(_ seconds: TimeInterval) -> Duration {
        .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
