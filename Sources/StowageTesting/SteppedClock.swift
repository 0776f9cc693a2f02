import Synchronization

/// A clock whose time moves only when told: tests pass it where Stowage waits (the storage
/// monitor's interval, the request collapser's timeout, the shared level's polls) and
/// ``advance(by:)`` it instead of sleeping.
///
/// A sleeper resumes as soon as an advance reaches its deadline; a cancelled sleeper resumes at
/// once with `CancellationError`, as `Task.sleep` does.
public final class SteppedClock: Clock, Sendable {
    /// A moment on the clock: the time since it was made.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock was made.
        public var offset: Duration

        /// The moment `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this moment to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
    }

    private let state = Mutex(State())

    /// A clock at offset zero with no sleepers.
    public init() {}

    /// The moment the clock shows: moved only by ``advance(by:)``.
    public var now: Instant { state.withLock { $0.now } }
    /// Zero: the clock moves exactly as far as it is told.
    public var minimumResolution: Duration { .zero }

    /// Sleepers waiting now, for tests that must know a wait has begun before they advance.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until an ``advance(by:)`` reaches `deadline`, or throws `CancellationError` at once
    /// when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: (any Error)?? = state.withLock { state in
                    if Task.isCancelled { return .some(CancellationError()) }
                    if deadline <= state.now { return .some(nil) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return .none
                }
                switch resumeNow {
                case .some(.some(let error)): continuation.resume(throwing: error)
                case .some(.none): continuation.resume()
                case .none: break
                }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline it reaches.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
