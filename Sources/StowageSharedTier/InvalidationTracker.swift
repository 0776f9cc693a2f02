import Logging
import NIOCore
import StowageRedis
import Synchronization

/// The node's write connection: one RESP3 connection with server-assisted client-side caching
/// in broadcast mode (`CLIENT TRACKING ON BCAST PREFIX NS:{= NOLOOP`, Redis ≥ 6), which carries
/// every write of the tier and receives the server's invalidation pushes for everyone else's.
///
/// Redis itself tells every tracking connection which keys under the prefix were modified, by
/// any client, so a write carries no extra command. `NOLOOP` leaves out writes made by the same
/// connection — not by the same process — which is why all of a node's writes go through this
/// one connection (auto-pipelined: concurrent writers share it like the pool's shared
/// connections) and reads keep using the pool.
///
/// The connection reconnects with the client's backoff until cancelled. Invalidations sent
/// while it was down are lost, so ``Event/disconnected(_:)`` is a gap, like the subscription's.
/// A server that cannot track (it speaks only RESP2, or refuses `CLIENT TRACKING`: Redis < 6, the
/// command renamed or denied by an ACL) ends the tracker with ``Event/unavailable(_:)``; the tier
/// then publishes its invalidations instead.
final class InvalidationTracker: Sendable {
    enum Event: Sendable {
        /// Tracking is on, on a new connection (the first, or one after ``disconnected(_:)``).
        case tracking
        /// The server cannot track; the tracker stopped for good.
        case unavailable(reason: String)
        /// The connection closed or could not be made; a reconnect follows.
        case disconnected(RedisError)
        /// Values other clients wrote or removed (or that expired or were evicted), as tier keys.
        case keys([String])
        /// `FLUSHALL` or `FLUSHDB`: every value is gone.
        case flushed
    }

    private let configuration: RedisConfiguration
    private let prefix: String
    private let onEvent: @Sendable (Event) -> Void
    private let current = Mutex<RedisConnection?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// - Parameters:
    ///   - prefix: The key prefix to track (`NS:{=`).
    ///   - onEvent: Receives every event in order; pushes arrive on the connection's event loop.
    init(configuration: RedisConfiguration, prefix: String, onEvent: @escaping @Sendable (Event) -> Void) {
        self.configuration = configuration
        self.prefix = prefix
        self.onEvent = onEvent
    }

    /// Connects and keeps the connection until ``cancel()``.
    func start() {
        let runner = Task { await run() }
        task.withLock { $0 = runner }
    }

    /// Stops reconnecting and closes the connection.
    func cancel() {
        task.withLock { $0?.cancel() }
        if let connection = current.withLock({ $0 }) { Task { await connection.close() } }
    }

    /// The tracking connection, when it is open with tracking on.
    var connection: RedisConnection? {
        guard let connection = current.withLock({ $0 }), connection.isActive else { return nil }
        return connection
    }

    private func run() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await RedisConnection.connect(configuration) { [prefix, onEvent] push in
                    if let event = Self.event(fromPush: push, prefix: prefix) { onEvent(event) }
                }
                guard connection.protocolVersion == 3 else {
                    await connection.close()
                    onEvent(
                        .unavailable(
                            reason: "the server speaks RESP2 only (no HELLO 3, or the protocol is pinned to 2)"
                        )
                    )
                    return
                }
                let reply = try await connection.sendRaw(
                    RedisCommand("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", RedisArgument(prefix), "NOLOOP")
                )
                if let message = reply.errorMessage {
                    await connection.close()
                    if Self.isTransient(message) {
                        throw RedisError(
                            code: .server,
                            message: "CLIENT TRACKING failed for now; retrying",
                            server: connection.server,
                            serverMessage: message
                        )
                    }
                    onEvent(.unavailable(reason: "the server refused CLIENT TRACKING: \(message)"))
                    return
                }
                failures = 0
                current.withLock { $0 = connection }
                onEvent(.tracking)
                await withTaskCancellationHandler {
                    try? await connection.closeFuture.get()
                } onCancel: {
                    Task { await connection.close() }
                }
                current.withLock { if $0 === connection { $0 = nil } }
                if Task.isCancelled { return }
                onEvent(
                    .disconnected(
                        RedisError(
                            code: .connectionClosed,
                            message: "the invalidation tracking connection closed; reconnecting",
                            server: connection.server
                        )
                    )
                )
            } catch {
                if Task.isCancelled { return }
                failures += 1
                onEvent(
                    .disconnected(
                        error as? RedisError
                            ?? RedisError(
                                code: .connectionFailed,
                                message: "cannot open the invalidation tracking connection",
                                server: configuration.address,
                                cause: error
                            )
                    )
                )
                try? await configuration.backoffClock.sleep(
                    for: configuration.reconnectBackoff.delay(afterFailures: failures)
                )
            }
        }
    }

    /// Error replies that say "not now" rather than "never": the server is starting or busy.
    private static func isTransient(_ message: String) -> Bool {
        let word = message.prefix { $0 != " " }
        return word == "LOADING" || word == "BUSY" || word == "TRYAGAIN" || word == "MASTERDOWN"
    }

    /// `> invalidate [keys]` (or `> invalidate _` after a flush) as an event; `nil` for other pushes.
    static func event(fromPush push: RESPValue, prefix: String) -> Event? {
        guard let parts = push.elements, parts.count == 2, parts[0].string?.lowercased() == "invalidate" else {
            return nil
        }
        if parts[1].isNull { return .flushed }
        guard let redisKeys = parts[1].elements else { return nil }
        let keys = redisKeys.compactMap { $0.string.flatMap { tierKey(fromRedisKey: $0, prefix: prefix) } }
        return keys.isEmpty ? nil : .keys(keys)
    }

    /// The tier key of a value key (`NS:{=key}` → `key`); `nil` for the lock and fence keys under
    /// the same prefix (`NS:{=key}:lock`, `NS:{=key}:fence`), which end in a letter, never in `}`.
    static func tierKey(fromRedisKey redisKey: String, prefix: String) -> String? {
        guard redisKey.hasPrefix(prefix), redisKey.hasSuffix("}"), redisKey.utf8.count > prefix.utf8.count else {
            return nil
        }
        return String(redisKey.dropFirst(prefix.count).dropLast())
    }
}
