import Synchronization

/// The pool connections that concurrent callers share (auto-pipelining, as lettuce and
/// StackExchange.Redis do): ``RedisConfiguration/multiplexedConnections`` slots, taken round
/// robin; each slot holds one connection leased from the pool for as long as it stays open.
///
/// Many commands in flight on one connection are safe because ``RedisChannelHandler`` matches
/// replies to commands in order, writes each request (a pipeline, `ASKING` + command) in one
/// piece, and coalesces the flushes of commands that arrive together into one `write(2)`.
/// Commands that block a connection or change its state must not come here
/// (``RedisCommand/needsOwnConnection``).
final class RedisSharedConnections: Sendable {
    private enum Slot {
        case empty
        /// One caller is opening the slot's connection; the others wait for it here.
        case opening([CheckedContinuation<RedisConnection, any Error>])
        case open(RedisConnection)
    }

    private struct State {
        var slots: [Slot]
        var isShutdown = false
    }

    private enum Step {
        case use(RedisConnection)
        case open(replacing: RedisConnection?)
        case wait
    }

    /// The slot changed while a caller decided to wait for it; it looks again.
    private struct SlotChanged: Error {}

    private let state: Mutex<State>
    private let next = Atomic<Int>(0)
    let count: Int

    init(count: Int) {
        self.count = count
        state = Mutex(State(slots: Array(repeating: .empty, count: count)))
    }

    /// Runs `body` on a shared connection of `pool`, opening it on first use. A connection that
    /// closed before the command went out is replaced and the command sent once more.
    func withConnection<T: Sendable>(
        from pool: RedisConnectionPool,
        _ body: (RedisConnection) async throws -> T
    ) async throws -> T {
        let index = next.add(1, ordering: .relaxed).oldValue % count
        let connection = try await connection(at: index, from: pool)
        do {
            return try await body(connection)
        } catch let error as RedisError where error.wasNotSent {
            return try await body(try await self.connection(at: index, from: pool))
        }
    }

    private func connection(at index: Int, from pool: RedisConnectionPool) async throws -> RedisConnection {
        while true {
            let step: Step = try state.withLock { state in
                if state.isShutdown { throw RedisConnectionPool.shutdownError(pool.configuration) }
                switch state.slots[index] {
                case .open(let connection) where connection.isActive:
                    return .use(connection)
                case .open(let closed):
                    state.slots[index] = .opening([])
                    return .open(replacing: closed)
                case .empty:
                    state.slots[index] = .opening([])
                    return .open(replacing: nil)
                case .opening:
                    return .wait
                }
            }
            switch step {
            case .use(let connection):
                return connection
            case .open(let closed):
                // The pool forgets a closed connection when it comes back.
                if let closed { pool.release(closed) }
                return try await open(at: index, from: pool)
            case .wait:
                do {
                    return try await waitForOpening(at: index)
                } catch is SlotChanged {
                    continue
                }
            }
        }
    }

    private func open(at index: Int, from pool: RedisConnectionPool) async throws -> RedisConnection {
        let result: Result<RedisConnection, any Error>
        do {
            result = .success(try await pool.lease())
        } catch {
            result = .failure(error)
        }
        let (waiters, isShutdown) = state.withLock {
            state -> ([CheckedContinuation<RedisConnection, any Error>], Bool) in
            guard case .opening(let waiters) = state.slots[index] else { return ([], state.isShutdown) }
            if case .success(let connection) = result, !state.isShutdown {
                state.slots[index] = .open(connection)
            } else {
                state.slots[index] = .empty
            }
            return (waiters, state.isShutdown)
        }
        if isShutdown, case .success(let connection) = result {
            pool.release(connection)
            let error = RedisConnectionPool.shutdownError(pool.configuration)
            for waiter in waiters { waiter.resume(throwing: error) }
            throw error
        }
        for waiter in waiters { waiter.resume(with: result) }
        return try result.get()
    }

    private func waitForOpening(at index: Int) async throws -> RedisConnection {
        try await withCheckedThrowingContinuation { continuation in
            let ready: RedisConnection?? = state.withLock { state in
                switch state.slots[index] {
                case .opening(var waiters):
                    waiters.append(continuation)
                    state.slots[index] = .opening(waiters)
                    return .none
                case .open(let connection) where connection.isActive:
                    return .some(connection)
                default:
                    return .some(nil)
                }
            }
            switch ready {
            case .none: break
            case .some(.some(let connection)): continuation.resume(returning: connection)
            case .some(.none): continuation.resume(throwing: SlotChanged())
            }
        }
    }

    /// Empties every slot; later callers get `.shutdown`. Returns the open connections so the
    /// pool can close them (a connection being opened goes back to the pool, which closes it).
    func shutdown() -> [RedisConnection] {
        state.withLock { state in
            state.isShutdown = true
            var open: [RedisConnection] = []
            for (index, slot) in state.slots.enumerated() {
                if case .open(let connection) = slot {
                    open.append(connection)
                    state.slots[index] = .empty
                }
            }
            return open
        }
    }
}
