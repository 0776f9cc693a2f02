import Foundation
import StowageCore

/// A cache level that several processes or machines share, behind memory and disk in a
/// ``HybridCache``: bytes by string key with a time-to-live, invalidation messages between
/// nodes, and a lease lock so a value missing everywhere is loaded by one node only.
///
/// StowageCache defines the level and uses it; it knows no network protocol. `StowageSharedTier`
/// provides `RedisSharedTier` (Redis, Valkey, Redis Cluster). Any key/value cache can plug in the
/// same way: an HTTP cache stores its encoded responses as the bytes.
///
/// Implementations report failures by throwing; ``HybridCache`` turns those into misses and
/// keeps serving from its local levels (see ``HybridCache`` "Degradation"), so a shared level
/// never needs to hide its errors itself.
public protocol SharedCacheTier: Sendable {
    /// The entry for `key`, or `nil` when there is none or it expired.
    func entry(forKey key: String) async throws -> SharedCacheEntry?

    /// Stores `data` for `key` (replacing any value) and tells the other nodes to drop their
    /// copies.
    ///
    /// - Parameters:
    ///   - data: The value's bytes.
    ///   - key: The key, as the local levels name it.
    ///   - timeToLive: How long until the value expires in the shared level; `nil` for no expiry.
    func setData(_ data: Data, forKey key: String, timeToLive: Duration?) async throws

    /// Removes `key` and tells the other nodes to drop their copies.
    func removeData(forKey key: String) async throws

    /// A new stream of the invalidations other nodes send (never this node's own). Each call
    /// returns an independent stream; it ends when the tier shuts down.
    func invalidations() -> AsyncStream<SharedCacheInvalidation>

    /// Takes the load lock of `key` if no node holds it and `key` has no value, for at most
    /// `lease`. Checking both in one step closes the window in which a node that has just
    /// missed the value would load it again because the last loader stored it and let go.
    ///
    /// - Returns: The lock, with a fencing token larger than any issued before for `key`; `nil`
    ///   when another node holds it or the value is there (read it).
    func lockForLoading(key: String, lease: Duration) async throws -> SharedCacheLoadLock?

    /// Whether some node holds the load lock of `key`.
    func isLockedForLoading(key: String) async throws -> Bool

    /// Stores a loaded value and releases `lock`, only if `lock` is still held (its lease did not
    /// run out and pass to another node): the fencing token stops a slow loader from
    /// overwriting a newer value.
    ///
    /// - Returns: Whether the value was stored.
    func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration?,
        releasing lock: SharedCacheLoadLock
    )
        async throws -> Bool

    /// Releases `lock` without storing anything (the load failed), if it is still held.
    func unlock(_ lock: SharedCacheLoadLock) async throws
    /// Tells every other node to drop its local copies of the keys that start with `prefix` (a
    /// ban): they receive ``SharedCacheInvalidation/prefix(_:)``. Entries the shared level
    /// itself holds are not touched here; the caller removes the ones it knows of.
    ///
    /// - Throws: `StowageError` `.unsupported` from a level that cannot (the default).
    func invalidate(keysWithPrefix prefix: String) async throws
}

extension SharedCacheTier {
    /// Throws `StowageError` `.unsupported`: a tier that cannot send prefix invalidations.
    public func invalidate(keysWithPrefix prefix: String) async throws {
        throw StowageError(
            code: .unsupported,
            message:
                "\(type(of: self)) cannot send prefix invalidations; other nodes keep their copies until they expire"
        )
    }
}

/// Bytes from a shared level and how long they have left.
public struct SharedCacheEntry: Sendable, Hashable {
    /// The value's bytes.
    public var data: Data
    /// How long until the entry expires, `nil` when it does not.
    public var timeToLive: Duration?

    /// An entry of `data` with `timeToLive` left (`nil`: no expiry).
    public init(data: Data, timeToLive: Duration?) {
        self.data = data
        self.timeToLive = timeToLive
    }
}

/// What another node changed.
public enum SharedCacheInvalidation: Sendable, Hashable {
    /// `key` was overwritten or removed on another node: drop local copies.
    case key(String)
    /// Another node banned every key that starts with the prefix: drop local copies of them
    /// (``SharedCacheTier/invalidate(keysWithPrefix:)``).
    case prefix(String)
    /// Invalidations may have been missed (the channel broke and came back) while the shared
    /// level kept its values: memory copies are dropped, and each older disk copy is confirmed
    /// against the shared level before it is served again (`InvalidationHorizon`).
    case all
    /// The shared level lost its values while this node was not listening (it restarted empty
    /// or was flushed): it can neither confirm nor refute a local copy any more, so local copies
    /// stand until they expire (memory copies are dropped, disk copies kept unconfirmed) —
    /// nothing is lost locally because the shared level was.
    case emptied
    /// Invalidations may be missed from now on (the channel broke); ``all`` or ``emptied``
    /// follows once they flow again. Until then disk copies are served unconfirmed, as in an
    /// outage: a shared level that is coming back may be coming back empty, and its "no value"
    /// would wrongly refute every local copy.
    case interrupted
}

/// A held load lock: the key and the fencing token it was granted with.
public struct SharedCacheLoadLock: Sendable, Hashable {
    /// The key the lock is for.
    public var key: String
    /// Increases with every lock granted for the key.
    public var fencingToken: Int64

    /// A lock on `key` granted with `fencingToken`.
    public init(key: String, fencingToken: Int64) {
        self.key = key
        self.fencingToken = fencingToken
    }
}
