import Foundation
import StowageCache
import Synchronization

/// A shared cache level held in this process, for the nodes of one test: what Redis is to
/// `RedisSharedTier`, with outages a test turns on and off.
///
/// Each node takes its own handle (``node()``): a change made through one handle reaches the
/// others as an invalidation and never comes back to its sender, as with Redis. While the level
/// is down (``goDown(interruptingInvalidations:)``) every call throws; ``comeBack(emptied:notifying:)``
/// answers again and, as `RedisSharedTier` does when its subscription returns, tells every node
/// `.all` (or `.emptied` when it lost its values).
///
/// ```swift
/// let level = InMemorySharedLevel()
/// let a = HybridCache(memory: …, disk: …, serializer: …, shared: level.node())
/// level.goDown()           // a's writes now stay local, pending
/// level.comeBack()         // a hears `.all` and sends them
/// ```
public final class InMemorySharedLevel: Sendable {
    /// What a call throws while the level is down.
    public struct Unreachable: Error, CustomStringConvertible {
        /// Says the level is down.
        public var description: String { "the in-memory shared level is down" }
    }

    private struct Entry {
        var data: Data
        var expires: ContinuousClock.Instant?
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var locks: [String: (token: Int64, expires: ContinuousClock.Instant)] = [:]
        var lastToken: [String: Int64] = [:]
        var subscribers: [(node: Int, continuation: AsyncStream<SharedCacheInvalidation>.Continuation)] = []
        var nodeCount = 0
        var isDown = false
        var sendsInvalidations = true
        var readHook: (@Sendable (String) async -> Void)?
        var writeHook: (@Sendable (String) async -> Void)?
    }

    private let state = Mutex(State())
    private let clock = ContinuousClock()

    /// An empty level, up, with no node yet.
    public init() {}

    /// A handle for one more node.
    public func node() -> InMemorySharedTier {
        let id = state.withLock { state in
            state.nodeCount += 1
            return state.nodeCount
        }
        return InMemorySharedTier(level: self, node: id)
    }

    /// Every call fails from now on; with `interruptingInvalidations`, the nodes hear
    /// `.interrupted`, as when their subscription breaks.
    public func goDown(interruptingInvalidations: Bool = true) {
        state.withLock { $0.isDown = true }
        if interruptingInvalidations { tellEveryNode(.interrupted) }
    }

    /// Calls succeed again; with `emptied`, the values are gone (a restart without its data).
    /// With `notifying`, the nodes hear `.all` (or `.emptied`), as when their subscription
    /// comes back.
    public func comeBack(emptied: Bool = false, notifying: Bool = true) {
        state.withLock { state in
            state.isDown = false
            if emptied { state.entries = [:] }
        }
        if notifying { tellEveryNode(emptied ? .emptied : .all) }
    }

    /// Whether changes are announced to the other nodes; off, a change is missed by all of them
    /// (as a write from a plain Redis client reaches no node listening for published messages).
    public func setSendsInvalidations(_ sends: Bool) {
        state.withLock { $0.sendsInvalidations = sends }
    }

    /// Runs `hook` with the key of each read, after the value is taken and before it reaches the
    /// node: what a test needs to land a change in the middle of a node's fill.
    public func setReadHook(_ hook: (@Sendable (String) async -> Void)?) {
        state.withLock { $0.readHook = hook }
    }

    /// Runs `hook` with the key of each write or removal a node sends, before it lands: what a
    /// test needs to land a change in the middle of a node's replay.
    public func setWriteHook(_ hook: (@Sendable (String) async -> Void)?) {
        state.withLock { $0.writeHook = hook }
    }

    /// The hook set by ``setWriteHook(_:)``, run for `key`.
    fileprivate func runWriteHook(_ key: String) async {
        await state.withLock { $0.writeHook }?(key)
    }

    /// The bytes held for `key`, whether up or down; `nil` when none.
    public func data(forKey key: String) -> Data? {
        state.withLock { state in state.entries[key].flatMap { isLive($0) ? $0.data : nil } }
    }

    /// The keys held.
    public var keys: [String] {
        state.withLock { state in state.entries.filter { isLive($0.value) }.map(\.key).sorted() }
    }

    /// Ends every node's invalidation stream, as a tier's shutdown does, and drops the read and
    /// write hooks: a hook that captures what owns the level (a test's fleet of nodes) would
    /// otherwise keep it, its caches and its temporary directory alive after the test (two
    /// directories of every full test run were left behind that way).
    public func shutDown() {
        let subscribers = state.withLock { state in
            defer {
                state.subscribers = []
                state.readHook = nil
                state.writeHook = nil
            }
            return state.subscribers
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
    }

    private func isLive(_ entry: Entry) -> Bool {
        entry.expires.map { clock.now < $0 } ?? true
    }

    private func tellEveryNode(_ invalidation: SharedCacheInvalidation) {
        for subscriber in state.withLock({ $0.subscribers }) { subscriber.continuation.yield(invalidation) }
    }

    /// Runs `body` on the state unless the level is down.
    private func withState<T>(_ body: (inout State) throws -> T) throws -> T {
        try state.withLock { state in
            guard !state.isDown else { throw Unreachable() }
            return try body(&state)
        }
    }

    fileprivate func entry(forKey key: String) async throws -> SharedCacheEntry? {
        let (found, hook) = try withState { state -> (SharedCacheEntry?, (@Sendable (String) async -> Void)?) in
            guard let entry = state.entries[key], isLive(entry) else { return (nil, state.readHook) }
            let left = entry.expires.map { clock.now.duration(to: $0) }
            return (SharedCacheEntry(data: entry.data, timeToLive: left), state.readHook)
        }
        await hook?(key)
        return found
    }

    fileprivate func store(_ data: Data?, forKey key: String, timeToLive: Duration?, from node: Int) throws {
        let expires = timeToLive.map { clock.now.advanced(by: $0) }
        let subscribers = try withState { state in
            state.entries[key] = data.map { Entry(data: $0, expires: expires) }
            return state.sendsInvalidations ? state.subscribers.filter { $0.node != node } : []
        }
        for subscriber in subscribers { subscriber.continuation.yield(.key(key)) }
    }

    fileprivate func ban(_ prefix: String, from node: Int) throws {
        let subscribers = try withState { state in
            state.sendsInvalidations ? state.subscribers.filter { $0.node != node } : []
        }
        for subscriber in subscribers { subscriber.continuation.yield(.prefix(prefix)) }
    }

    fileprivate func subscribe(node: Int) -> AsyncStream<SharedCacheInvalidation> {
        let (stream, continuation) = AsyncStream.makeStream(of: SharedCacheInvalidation.self)
        state.withLock { $0.subscribers.append((node, continuation)) }
        return stream
    }

    fileprivate func lock(_ key: String, lease: Duration) throws -> SharedCacheLoadLock? {
        try withState { state in
            if let entry = state.entries[key], isLive(entry) { return nil }
            if let held = state.locks[key], clock.now < held.expires { return nil }
            let token = (state.lastToken[key] ?? 0) + 1
            state.lastToken[key] = token
            state.locks[key] = (token, clock.now.advanced(by: lease))
            return SharedCacheLoadLock(key: key, fencingToken: token)
        }
    }

    fileprivate func isLocked(_ key: String) throws -> Bool {
        try withState { state in state.locks[key].map { clock.now < $0.expires } ?? false }
    }

    /// Releases `lock` if still held; returns whether it was.
    fileprivate func release(_ lock: SharedCacheLoadLock) throws -> Bool {
        try withState { state in
            guard let held = state.locks[lock.key], held.token == lock.fencingToken, clock.now < held.expires else {
                return false
            }
            state.locks[lock.key] = nil
            return true
        }
    }
}

/// One node's handle on an ``InMemorySharedLevel``.
public struct InMemorySharedTier: SharedCacheTier {
    /// The level it reaches.
    public let level: InMemorySharedLevel
    let node: Int

    /// The live entry for `key`; throws while the level is down.
    public func entry(forKey key: String) async throws -> SharedCacheEntry? {
        try await level.entry(forKey: key)
    }

    /// Stores `data`; the other nodes hear `.key(key)`.
    public func setData(_ data: Data, forKey key: String, timeToLive: Duration?) async throws {
        await level.runWriteHook(key)
        try level.store(data, forKey: key, timeToLive: timeToLive, from: node)
    }

    /// Removes `key`; the other nodes hear `.key(key)`.
    public func removeData(forKey key: String) async throws {
        await level.runWriteHook(key)
        try level.store(nil, forKey: key, timeToLive: nil, from: node)
    }

    /// A new stream of the other nodes' changes and of the level's gaps.
    public func invalidations() -> AsyncStream<SharedCacheInvalidation> {
        level.subscribe(node: node)
    }

    /// The load lock of `key`, unless a node holds it or the value is there.
    public func lockForLoading(key: String, lease: Duration) async throws -> SharedCacheLoadLock? {
        try level.lock(key, lease: lease)
    }

    /// Whether a node holds the load lock of `key`.
    public func isLockedForLoading(key: String) async throws -> Bool {
        try level.isLocked(key)
    }

    /// Stores a loaded value and releases `lock`, if `lock` is still held.
    public func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration?,
        releasing lock: SharedCacheLoadLock
    ) async throws -> Bool {
        guard try level.release(lock) else { return false }
        try level.store(data, forKey: key, timeToLive: timeToLive, from: node)
        return true
    }

    /// Releases `lock`, if still held.
    public func unlock(_ lock: SharedCacheLoadLock) async throws {
        _ = try level.release(lock)
    }

    /// The other nodes hear `.prefix(prefix)`.
    public func invalidate(keysWithPrefix prefix: String) async throws {
        try level.ban(prefix, from: node)
    }
}
