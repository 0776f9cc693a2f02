import Synchronization

/// Lets one request per key go to the origin while the others wait for it (request collapsing,
/// as nginx's `proxy_cache_lock` and Varnish's waiting list do).
///
/// The first caller for a key becomes the leader; later callers wait until the leader reports
/// whether it stored a response (then they read it from the cache) or the timeout passes (then
/// they fetch on their own, as `proxy_cache_lock_timeout` lets them).
final class RequestCollapser: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private let waiting = Mutex<(nextID: UInt64, keys: [String: [Waiter]])>((0, [:]))
    /// What the timeout is measured by.
    private let clock: any Clock<Duration>

    init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
    }

    /// Whether the caller leads for `key`; a leader must call ``finish(_:stored:)`` exactly once.
    func tryLead(_ key: String) -> Bool {
        waiting.withLock { state in
            guard state.keys[key] == nil else { return false }
            state.keys[key] = []
            return true
        }
    }

    /// Waits for the leader of `key`; returns whether it stored a response, or may have (the
    /// leader finished before this caller could register), `false` on timeout or when the
    /// leader stored nothing.
    func wait(for key: String, timeout: Duration) async -> Bool {
        let id = waiting.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let registered = self.waiting.withLock { state -> Bool in
                        guard state.keys[key] != nil else { return false }
                        state.keys[key]!.append(Waiter(id: id, continuation: continuation))
                        return true
                    }
                    // The leader finished between tryLead and here: its response may be stored.
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
                let waiter = waiting.withLock { state -> Waiter? in
                    guard let index = state.keys[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.keys[key]!.remove(at: index)
                }
                waiter?.continuation.resume(returning: false)
            }
            group.cancelAll()
            return first ?? false
        }
    }

    /// The leader of `key` is done; wakes every waiter.
    func finish(_ key: String, stored: Bool) {
        let waiters = waiting.withLock { state in state.keys.removeValue(forKey: key) ?? [] }
        for waiter in waiters { waiter.continuation.resume(returning: stored) }
    }
}
