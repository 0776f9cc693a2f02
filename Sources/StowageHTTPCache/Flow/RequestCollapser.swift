import StowageCore
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
///
/// The timeouts share one timer: a sleep on the clock until the earliest deadline of a waiting
/// caller, which times out the callers whose deadline has passed and sleeps again until the next
/// one, or ends when none is left. A sleep of its own per caller, cancelled when the leader wakes
/// it, is not freed by the cancel: Swift's `Task.sleep` keeps its wake-up task and dispatch timer
/// until the deadline (about 650 bytes of heap), so a proxy collapsing 1,500 requests a second
/// kept ~7,500 of them (5 MB) for the 5 s timeout, outside its memory capacity (issue 45, heaptrack).
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
        /// When it stops waiting and fetches on its own, on ``clock``.
        let deadline: Duration
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
        /// The timer that times out waiting callers: its id and the deadline it sleeps until;
        /// `nil` when none runs.
        var timer: (id: UInt64, wake: Duration)?

        /// Removes and returns the waiters whose deadline is at or before `now`, and the earliest
        /// deadline of those left.
        mutating func expire(at now: Duration) -> (expired: [Waiter], next: Duration?) {
            var expired: [Waiter] = []
            var next: Duration?
            func sweep(_ waiters: inout [Waiter]) {
                guard !waiters.isEmpty else { return }
                waiters.removeAll { waiter in
                    if waiter.deadline <= now {
                        expired.append(waiter)
                        return true
                    }
                    next = min(next ?? waiter.deadline, waiter.deadline)
                    return false
                }
            }
            // In place, through the values' indices (iterating the keys while writing would copy
            // the table).
            for index in current.values.indices { sweep(&current.values[index].waiters) }
            for index in retired.values.indices { sweep(&retired.values[index].waiters) }
            return (expired, next)
        }

        /// Removes and returns the waiter `id` of `flight`, if it is still waiting.
        mutating func removeWaiter(_ id: UInt64, of flight: Flight) -> Waiter? {
            withEntry(flight) { entry -> Waiter? in
                guard let index = entry.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return entry.waiters.remove(at: index)
            } ?? nil
        }

        mutating func withEntry<T>(_ flight: Flight, _ body: (inout Entry) -> T) -> T? {
            if current[flight.key]?.id == flight.id { return body(&current[flight.key]!) }
            if retired[flight.id] != nil { return body(&retired[flight.id]!) }
            return nil
        }
    }

    private let state = Mutex(State())
    /// What the timeout is measured by.
    private let clock: ElapsedClock

    init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = ElapsedClock(clock)
    }

    private enum Registration {
        case finished, cancelled
        case waiting(startsTimer: UInt64?)
    }

    /// Callers waiting for a flight now.
    var waiterCount: Int {
        state.withLock { state in
            state.current.values.reduce(0) { $0 + $1.waiters.count }
                + state.retired.values.reduce(0) { $0 + $1.waiters.count }
        }
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
    /// leader finished before this caller could register), `false` on timeout, on cancellation
    /// or when the leader stored nothing.
    func wait(for flight: Flight, timeout: Duration) async -> Bool {
        let (id, deadline) = state.withLock { state -> (UInt64, Duration) in
            state.nextID += 1
            return (state.nextID, clock.now + timeout)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let registration = state.withLock { state -> Registration in
                    let waiter = Waiter(id: id, deadline: deadline, continuation: continuation)
                    guard state.withEntry(flight, { $0.waiters.append(waiter) }) != nil else { return .finished }
                    if Task.isCancelled {
                        _ = state.removeWaiter(id, of: flight)
                        return .cancelled
                    }
                    // A timer that wakes by this deadline times this caller out too.
                    if let timer = state.timer, timer.wake <= deadline { return .waiting(startsTimer: nil) }
                    state.nextID += 1
                    state.timer = (state.nextID, deadline)
                    return .waiting(startsTimer: state.nextID)
                }
                switch registration {
                // The leader finished between joining and here: its response may be stored.
                case .finished: continuation.resume(returning: true)
                // Cancelled before the handler below could find it: stop waiting, as a timeout would.
                case .cancelled: continuation.resume(returning: false)
                case .waiting(let timer): if let timer { startTimer(timer, until: deadline) }
                }
            }
        } onCancel: {
            state.withLock { $0.removeWaiter(id, of: flight) }?.continuation.resume(returning: false)
        }
    }

    /// The timer `id`: sleeps until `wake`, times out the callers due by then and sleeps until
    /// the next deadline, while it is the collapser's timer and someone waits. One that a timer
    /// with an earlier deadline replaced (a shorter timeout) times out what is due and ends.
    private func startTimer(_ id: UInt64, until wake: Duration) {
        let clock = self.clock
        Task { [weak self] in
            var wake = wake
            while true {
                try? await clock.sleep(until: wake)
                guard let self else { return }
                let now = clock.now
                let (expired, next) = state.withLock { state -> ([Waiter], Duration?) in
                    let (expired, next) = state.expire(at: now)
                    guard state.timer?.id == id else { return (expired, nil) }
                    state.timer = next.map { (id, $0) }
                    return (expired, next)
                }
                for waiter in expired { waiter.continuation.resume(returning: false) }
                guard let next else { return }
                wake = next
            }
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
