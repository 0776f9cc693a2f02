import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs blocking file-system work off Swift's cooperative thread pool, on a bounded pool.
///
/// Directory walks and `unlink` storms can block for seconds; holding a cooperative thread that
/// long starves every other task (STYLE §4). The blocking function is the real implementation;
/// the async API hands it here and suspends until it finishes.
///
/// The work runs on a concurrent dispatch queue of default priority: a round trip costs about
/// 1 µs on the bench machine, against ~35 µs for a `.utility` queue (whose threads Linux wakes
/// slowly), ~28 µs for `NIOThreadPool` and ~18 µs for a `TaskExecutor` with its own threads
/// (`stowage-bench --filter async-hop`). At most ``limit`` items run at once; callers beyond
/// that wait without holding a thread, so a slow disk cannot make the queue spawn threads
/// without end. Short, bounded work — a prepared, indexed `SELECT` of an inline value — does not
/// come here at all: it runs on the caller (`DiskCache.data(forKey:)`).
package enum BlockingWork {
    private static let queue = DispatchQueue(label: "org.stowage.blocking-io", attributes: .concurrent)
    private static let slots = Slots(limit: limit)

    /// Items that run at once: twice the processors, at least 4 and at most 64. Disk work waits
    /// on the device more than on the CPU, so a few more than the cores keep a queue of requests
    /// in the disk.
    package static let limit = min(max(2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 4), 64)

    /// Runs `work` on the blocking-I/O pool and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        await slots.acquire()
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                let result = Result { try work() }
                slots.release()
                continuation.resume(with: result)
            }
        }
    }

    /// Runs non-throwing `work` on the blocking-I/O pool and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await slots.acquire()
        return await withCheckedContinuation { continuation in
            queue.async {
                let result = work()
                slots.release()
                continuation.resume(returning: result)
            }
        }
    }

    /// A counting semaphore for async callers: `acquire` suspends, never blocks a thread.
    private final class Slots: Sendable {
        private struct State {
            var inUse = 0
            var waiting: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())
        private let limit: Int

        init(limit: Int) {
            self.limit = limit
        }

        func acquire() async {
            let acquired = state.withLock { state in
                guard state.inUse < limit else { return false }
                state.inUse += 1
                return true
            }
            if acquired { return }
            await withCheckedContinuation { continuation in
                let acquired = state.withLock { state in
                    guard state.inUse < limit else {
                        state.waiting.append(continuation)
                        return false
                    }
                    state.inUse += 1
                    return true
                }
                if acquired { continuation.resume() }
            }
        }

        /// Frees a slot, or hands it straight to the longest waiter.
        func release() {
            let next = state.withLock { state in
                guard !state.waiting.isEmpty else {
                    state.inUse -= 1
                    return nil as CheckedContinuation<Void, Never>?
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }
}
