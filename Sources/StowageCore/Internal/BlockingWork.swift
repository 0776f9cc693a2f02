import Dispatch
import Synchronization

/// Runs blocking file-system work off Swift's cooperative thread pool, on a bounded pool.
///
/// Directory walks and `unlink` storms can block for seconds; holding a cooperative thread that
/// long starves every other task (Swift concurrency's forward-progress rule). The blocking function is the real implementation;
/// the async API hands it here and suspends until it finishes.
///
/// The pool is ``limit`` lanes, each a serial dispatch queue of default priority, and a caller
/// takes a free lane before it enqueues: each item runs at once on a thread of its own. (A
/// concurrent queue would not: libdispatch on Linux runs its items on as many threads as there
/// are cores, so two slow items there hold up everything behind them; serial queues get threads
/// of their own.) A round trip costs about 1 µs on the bench machine, against ~35 µs for a
/// `.utility` queue (whose threads Linux wakes slowly), ~19 µs for `NIOThreadPool` and ~22 µs
/// for a `TaskExecutor` with its own threads (`stowage-bench --filter async-hop`). Callers beyond
/// ``limit`` wait for a lane without holding a thread, so a slow disk cannot make the pool grow
/// without end. Short, bounded work — a prepared, indexed `SELECT` of an inline value — does not
/// come here at all: it runs on the caller (`DiskCache.data(forKey:)`).
package enum BlockingWork {
    private static let lanes = (0..<limit).map { DispatchQueue(label: "org.stowage.blocking-io.\($0)") }
    private static let freeLanes = Lanes(count: limit)

    /// Items that run at once: 64, whatever the cores. Disk work waits on the device or on a
    /// lock more than on the CPU, and some of it waits long by design (another process's cache
    /// lock, a slow disk): with a pool the size of the cores (4 lanes here) a few such waits
    /// held up unrelated work for seconds in a loaded test run — a request collapser's waiters
    /// timed out behind them. Lanes get their threads from dispatch only while they have work.
    package static let limit = 64

    /// Runs `work` on the blocking-I/O pool and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run { Result { try work() } }.get()
    }

    /// Runs non-throwing `work` on the blocking-I/O pool and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        let lane = await freeLanes.acquire()
        return await withCheckedContinuation { continuation in
            lanes[lane].async {
                let result = work()
                freeLanes.release(lane)
                continuation.resume(returning: result)
            }
        }
    }

    /// The free lanes, handed out to async callers: `acquire` suspends, never blocks a thread.
    private final class Lanes: Sendable {
        private struct State {
            var free: [Int]
            var waiting: [CheckedContinuation<Int, Never>] = []
        }

        private let state: Mutex<State>

        init(count: Int) {
            // The most recently freed lane first: its thread is the likeliest to be awake.
            state = Mutex(State(free: Array((0..<count).reversed())))
        }

        func acquire() async -> Int {
            if let lane = state.withLock({ $0.free.popLast() }) { return lane }
            return await withCheckedContinuation { continuation in
                let lane = state.withLock { state in
                    guard let lane = state.free.popLast() else {
                        state.waiting.append(continuation)
                        return nil as Int?
                    }
                    return lane
                }
                if let lane { continuation.resume(returning: lane) }
            }
        }

        /// Frees `lane`, or hands it straight to the longest waiter.
        func release(_ lane: Int) {
            let next = state.withLock { state in
                guard !state.waiting.isEmpty else {
                    state.free.append(lane)
                    return nil as CheckedContinuation<Int, Never>?
                }
                return state.waiting.removeFirst()
            }
            next?.resume(returning: lane)
        }
    }
}
