import NIOCore
import StowageLoopClock
import Synchronization

/// Connections to one server, at most ``RedisConfiguration/maximumConnections`` of them,
/// opened on demand and reused.
///
/// - A caller takes an idle connection, or opens one while under the limit, or waits up to
///   ``RedisConfiguration/poolWaitTimeout`` for one to come back (then `.poolExhausted`).
/// - Closed connections are dropped when they come back or are found idle.
/// - After a failed connect, new connects wait for the backoff delay
///   (``RedisConfiguration/reconnectBackoff``); while no connection is open, callers fail at once
///   with `.connectionFailed` instead of piling up, so an outage costs them microseconds, not a
///   connect timeout each. The first connect after the delay probes the server again.
final class RedisConnectionPool: Sendable {
    let configuration: RedisConfiguration

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<RedisConnection, any Error>
    }

    private struct State {
        var idle: [RedisConnection] = []
        /// Open and opening connections, idle or leased.
        var count = 0
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        /// Waiters whose timer is armed but who have not joined ``waiters`` yet.
        var arrivingWaiterIDs: Set<Int> = []
        /// Arriving waiters whose timer fired before they joined: they fail as they arrive.
        var expiredWaiterIDs: Set<Int> = []
        var consecutiveFailures = 0
        /// When connects may be tried again, in ``elapsed`` time.
        var retryAfter: Duration?
        var lastFailure: RedisError?
        var isShutdown = false
        /// Every open connection, idle, leased or shared, until it is found closed: what
        /// ``closed()`` waits for and ``closeEveryConnection()`` closes.
        var connections: [ObjectIdentifier: RedisConnection] = [:]
    }

    private enum Decision {
        case use(RedisConnection)
        case open
        case wait
        case fail(RedisError)
    }

    private let state = Mutex(State())
    private let shared: RedisSharedConnections
    private let opening = RedisOpeningChannels()
    /// The time since the pool was made, on ``RedisConfiguration/backoffClock``.
    private let elapsed: @Sendable () -> Duration

    init(configuration: RedisConfiguration) {
        self.configuration = configuration
        elapsed = Self.stopwatch(configuration.backoffClock)
        shared = RedisSharedConnections(
            count: max(0, min(configuration.multiplexedConnections, configuration.maximumConnections))
        )
    }

    /// Runs `command`-sending `body` on a connection that concurrent callers share (see
    /// ``RedisSharedConnections``), or on a leased one when `exclusive` or when the
    /// configuration shares none.
    func withSharedConnection<T: Sendable>(
        exclusive: Bool = false,
        _ body: (RedisConnection) async throws -> T
    ) async throws -> T {
        if exclusive || shared.count == 0 { return try await withConnection(body) }
        return try await shared.withConnection(from: self, body)
    }

    /// Runs `body` with a leased connection and returns it to the pool afterwards.
    ///
    /// When `body` fails because the connection had closed before anything was sent (it was
    /// idle when the server dropped it), `body` runs once more on a fresh connection.
    func withConnection<T: Sendable>(_ body: (RedisConnection) async throws -> T) async throws -> T {
        let connection = try await lease()
        do {
            let result = try await body(connection)
            release(connection)
            return result
        } catch let error as RedisError where error.wasNotSent {
            release(connection)
            let fresh = try await lease()
            defer { release(fresh) }
            return try await body(fresh)
        } catch {
            release(connection)
            throw error
        }
    }

    func lease() async throws -> RedisConnection {
        let now = elapsed()
        let decision: Decision = state.withLock { state in
            if state.isShutdown { return .fail(Self.shutdownError(configuration)) }
            while let connection = state.idle.popLast() {
                if connection.isActive { return .use(connection) }
                state.count -= 1
                state.connections[ObjectIdentifier(connection)] = nil
            }
            if state.count < configuration.maximumConnections {
                if let retryAfter = state.retryAfter, now < retryAfter, state.count == 0 {
                    return .fail(
                        RedisError(
                            code: .connectionFailed,
                            message: "Redis is unreachable (\(state.consecutiveFailures) failed connects); "
                                + "the next attempt is in \(retryAfter - now)",
                            server: configuration.address,
                            cause: state.lastFailure
                        )
                    )
                }
                state.count += 1
                return .open
            }
            return .wait
        }
        switch decision {
        case .use(let connection): return connection
        case .fail(let error): throw error
        case .open: return try await open()
        case .wait: return try await waitForConnection()
        }
    }

    func release(_ connection: RedisConnection) {
        let waiter: Waiter? = state.withLock { state in
            guard connection.isActive, !state.isShutdown else {
                state.count -= 1
                // After a shutdown it stays listed until it has closed (``closed()`` waits for it).
                if !state.isShutdown { state.connections[ObjectIdentifier(connection)] = nil }
                return nil
            }
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.idle.append(connection)
            return nil
        }
        if let waiter {
            waiter.continuation.resume(returning: connection)
        } else if !connection.isActive {
            replaceForWaiter()
        } else if state.withLock({ $0.isShutdown }) {
            Task { await connection.close() }
        }
    }

    /// A leased connection closed; a waiter (if any) gets a fresh one.
    private func replaceForWaiter() {
        let waiter: Waiter? = state.withLock { state in
            guard !state.waiters.isEmpty, state.count < configuration.maximumConnections else { return nil }
            state.count += 1
            return state.waiters.removeFirst()
        }
        guard let waiter else { return }
        Task {
            do {
                waiter.continuation.resume(returning: try await open())
            } catch {
                waiter.continuation.resume(throwing: error)
            }
        }
    }

    private func open() async throws -> RedisConnection {
        do {
            let connection = try await RedisConnection.connect(configuration, recordingIn: opening)
            let isShutdown = state.withLock { state in
                state.consecutiveFailures = 0
                state.retryAfter = nil
                state.lastFailure = nil
                // Opened after the shutdown listed what to close: nobody would close it. (The
                // shutdown error thrown below is counted off by the `catch`.)
                guard !state.isShutdown else { return true }
                state.connections[ObjectIdentifier(connection)] = connection
                return false
            }
            if isShutdown {
                await connection.close()
                throw Self.shutdownError(configuration)
            }
            return connection
        } catch {
            let redisError =
                error as? RedisError
                ?? RedisError(
                    code: .connectionFailed,
                    message: "cannot connect",
                    server: configuration.address,
                    cause: error
                )
            let (waiters, isShutdown): ([Waiter], Bool) = state.withLock { state in
                state.count -= 1
                // A handshake the shutdown cut short is no failure of the server's.
                if state.isShutdown { return ([], true) }
                state.consecutiveFailures += 1
                state.lastFailure = redisError
                state.retryAfter =
                    elapsed() + configuration.reconnectBackoff.delay(afterFailures: state.consecutiveFailures)
                // Nobody is connected; the waiters would only wait for a timeout.
                guard state.count == 0 else { return ([], false) }
                defer { state.waiters.removeAll() }
                return (state.waiters, false)
            }
            if isShutdown { throw Self.shutdownError(configuration) }
            for waiter in waiters { waiter.continuation.resume(throwing: redisError) }
            throw redisError
        }
    }

    private func waitForConnection() async throws -> RedisConnection {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            state.arrivingWaiterIDs.insert(state.nextWaiterID)
            return state.nextWaiterID
        }
        let timeout = configuration.poolWaitTimeout
        let exhausted = RedisError(
            code: .poolExhausted,
            message: "all \(configuration.maximumConnections) connections stayed busy for \(timeout); "
                + "raise maximumConnections or poolWaitTimeout, or send fewer commands at once",
            server: configuration.address
        )
        // The timer may fire before the waiter has joined (at once for a zero timeout, on
        // another thread): it then marks the waiter expired, and the waiter fails as it arrives.
        let timer = LoopClock(configuration.timeoutClock).scheduleTask(
            on: configuration.eventLoopGroup.any(),
            in: .milliseconds(Int64(timeout.milliseconds))
        ) { [self] in
            let expired: Waiter? = state.withLock { state in
                if state.arrivingWaiterIDs.remove(id) != nil {
                    state.expiredWaiterIDs.insert(id)
                    return nil
                }
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            expired?.continuation.resume(throwing: exhausted)
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let failure: RedisError? = state.withLock { state in
                state.arrivingWaiterIDs.remove(id)
                let expired = state.expiredWaiterIDs.remove(id) != nil
                if state.isShutdown { return Self.shutdownError(configuration) }
                // A connection may have come back between the decision and now.
                while let connection = state.idle.popLast() {
                    if connection.isActive {
                        continuation.resume(returning: connection)
                        return nil
                    }
                    state.count -= 1
                    state.connections[ObjectIdentifier(connection)] = nil
                }
                if expired { return exhausted }
                state.waiters.append(Waiter(id: id, continuation: continuation))
                return nil
            }
            if let failure { continuation.resume(throwing: failure) }
        }
    }

    /// Closes idle and shared connections, and those still in their handshake, and fails waiters;
    /// leased connections close when they come back.
    func shutdown() async {
        let sharedConnections = shared.shutdown()
        let (idle, waiters) = state.withLock { state in
            state.isShutdown = true
            state.count -= sharedConnections.count
            defer {
                state.idle.removeAll()
                state.waiters.removeAll()
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Self.shutdownError(configuration)) }
        opening.closeAll()
        for connection in idle + sharedConnections { await connection.close() }
    }

    /// After ``shutdown()``: returns when every connection the pool opened has closed, leased
    /// ones included once their callers have given them back (they close then).
    func closed() async {
        let connections = state.withLock { Array($0.connections.values) }
        for connection in connections { try? await connection.closeFuture.get() }
    }

    /// Closes every connection now, leased ones included: their callers' commands fail with
    /// `.connectionClosed`. For a shutdown that may not wait (the task was cancelled).
    ///
    /// It marks the pool shut down under the same lock as it lists the connections: a connection
    /// whose handshake ends after the list was taken is then closed by `open()` instead of joining
    /// the pool, where nothing would close it and `closed()` would wait for its caller.
    func closeEveryConnection() {
        let connections = state.withLock { state in
            state.isShutdown = true
            return Array(state.connections.values)
        }
        opening.closeAll()
        for connection in connections { connection.channel.close(promise: nil) }
    }

    /// Reads the time since now on `clock`.
    private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// Open connections (idle and leased), for tests and diagnostics.
    var connectionCount: Int { state.withLock { $0.count } }

    static func shutdownError(_ configuration: RedisConfiguration) -> RedisError {
        RedisError(code: .shutdown, message: "the Redis client was shut down", server: configuration.address)
    }
}
