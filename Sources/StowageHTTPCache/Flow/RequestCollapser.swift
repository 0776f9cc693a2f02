import Synchronization

/// Lets one request per key go to the origin while the others wait for it (request collapsing,
/// as nginx's `proxy_cache_lock` and Varnish's waiting list do).
///
/// The first caller for a key leads a flight; later callers wait until the leader reports
/// whether it stored a response (then they read it from the cache) or the timeout passes (then
/// they fetch on their own, as `proxy_cache_lock_timeout` lets them).
///
/// A flight that an invalidation overtook is retired: a caller that comes after the
/// invalidation never joins it (its response would be what the invalidation removed) and leads
/// a flight of its own; the retired flight's leader still wakes the callers that joined it.
final class RequestCollapser: Sendable {
    /// One leader's fetch for a key.
    struct Flight: Sendable, Hashable {
        let key: String
        fileprivate let id: UInt64
    }

    /// What ``join(_:startedAt:isRetired:)`` made of the caller.
    enum Role: Sendable {
        /// The caller fetches; it must call ``finish(_:stored:)`` exactly once.
        case leader(Flight)
        /// The caller waits for the flight (``wait(for:timeout:)``).
        case follower(Flight)
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct Entry {
        let id: UInt64
        /// What the leader noted when it joined (``InvalidationOrder/current``).
        let startedAt: UInt64
        var waiters: [Waiter] = []
    }

    private struct State {
        var nextID: UInt64 = 0
        /// The flight a caller for the key joins.
        var current: [String: Entry] = [:]
        /// Flights an invalidation overtook, still under way, by id.
        var retired: [UInt64: Entry] = [:]

        mutating func withEntry<T>(_ flight: Flight, _ body: (inout Entry) -> T) -> T? {
            if current[flight.key]?.id == flight.id { return body(&current[flight.key]!) }
            if retired[flight.id] != nil { return body(&retired[flight.id]!) }
            return nil
        }
    }

    private let state = Mutex(State())
    /// What the timeout is measured by.
    private let clock: any Clock<Duration>

    init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
    }

    /// Joins the flight for `key`, or leads a new one when there is none or `isRetired` says
    /// an invalidation overtook it (given the `startedAt` its leader joined with).
    func join(_ key: String, startedAt: UInt64, isRetired: (UInt64) -> Bool = { _ in false }) -> Role {
        state.withLock { state in
            if let entry = state.current[key] {
                if !isRetired(entry.startedAt) { return .follower(Flight(key: key, id: entry.id)) }
                state.retired[entry.id] = entry
            }
            state.nextID += 1
            state.current[key] = Entry(id: state.nextID, startedAt: startedAt)
            return .leader(Flight(key: key, id: state.nextID))
        }
    }

    /// Waits for the leader of `flight`; returns whether it stored a response, or may have (the
    /// leader finished before this caller could register), `false` on timeout or when the
    /// leader stored nothing.
    func wait(for flight: Flight, timeout: Duration) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let registered = self.state.withLock { state -> Bool in
                        state.withEntry(flight) { $0.waiters.append(Waiter(id: id, continuation: continuation)) } != nil
                    }
                    // The leader finished between joining and here: its response may be stored.
                    if !registered { continuation.resume(returning: true) }
                }
            }
            group.addTask {
                try? await self.clock.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            if first == nil {
                // Timed out: take ourselves off the list so the leader does not resume us twice.
                let waiter = state.withLock { state -> Waiter? in
                    state.withEntry(flight) { entry -> Waiter? in
                        guard let index = entry.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                        return entry.waiters.remove(at: index)
                    } ?? nil
                }
                waiter?.continuation.resume(returning: false)
            }
            group.cancelAll()
            return first ?? false
        }
    }

    /// The leader of `flight` is done; wakes every caller waiting for it.
    func finish(_ flight: Flight, stored: Bool) {
        let waiters = state.withLock { state -> [Waiter] in
            if state.current[flight.key]?.id == flight.id {
                return state.current.removeValue(forKey: flight.key)?.waiters ?? []
            }
            return state.retired.removeValue(forKey: flight.id)?.waiters ?? []
        }
        for waiter in waiters { waiter.continuation.resume(returning: stored) }
    }
}
