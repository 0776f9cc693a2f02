import Synchronization

/// Wakes the callers of ``RedisSharedTier/waitUntilSubscribed(timeout:clock:)`` when every
/// invalidation source is up, instead of each polling the tier's `ready` flag.
final class ReadinessSignal: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Resumes every waiter; the caller has set its flag to `true` first.
    func fire() {
        let waiters = state.withLock { state in
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``fire()`` is called or `isReady()` holds (asked under the lock, so a fire
    /// between the two is not missed), or at once when the task is cancelled.
    func wait(until isReady: @escaping @Sendable () -> Bool) async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if isReady() || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
