import Dispatch
import Logging
import Synchronization

/// The disk cache's background work, one job at a time on one serial queue: the whole-index
/// check after an open, the trim after a write takes the cache over a limit, the batch of
/// buffered access times, the commit of staged writes
/// (``DiskCache/Durability/deferred(maximumDelay:)``) and the WAL checkpoint.
///
/// - A job already queued is not queued again: every job reads what it works on (the staged
///   writes, the buffered access times, the totals) when it runs, so the queued one does the
///   work of both. A job that is running can be queued once more.
/// - Jobs run in the order they were queued, each after the previous one has ended. A job that
///   throws is logged, and the next one runs.
/// - A timer (``schedule(_:after:on:_:)``) sleeps on the clock it is given, then queues its job.
///   One timer per job at a time: a pending timer fires before a later request for the same
///   delay would, and its job does that request's work too.
/// - ``run(_:)`` runs work on the lane and waits for it (an explicit `trim()`, which so follows
///   any background trim already queued).
/// - ``drain()`` stops the timers, refuses new jobs, lets the queued ones finish and ends the
///   lane: nothing runs on it afterwards. `DiskCache.close()` drains before its last commits.
///
/// The synchronous store (index, files, staging) does not come here: a read or a write runs on
/// its caller's thread, and the async API hands it to `BlockingWork`.
final class DiskCacheMaintenance: Sendable {
    /// The kinds of background work; one of each can be queued at a time.
    enum Job: Hashable, Sendable, CustomStringConvertible {
        /// The trim to ``DiskCache/Configuration/trimRatio`` after a write went over a limit.
        case trim
        /// Writing the buffered access times to the index.
        case accessLogFlush
        /// Committing the staged writes once their delay has passed.
        case stagedFlush
        /// A passive WAL checkpoint (`DiskCacheCheckpointer`).
        case checkpoint
        /// The whole-file check of the index and its totals after an open (`DiskCache+Integrity`).
        case integrityCheck
        /// The check of the totals row a cull begun in a commit asks for
        /// (`DiskCacheCommitQueue.Cull`).
        case totalsCheck

        var description: String {
            switch self {
            case .trim: "background trim"
            case .accessLogFlush: "access-time flush"
            case .stagedFlush: "staged-write commit"
            case .checkpoint: "WAL checkpoint"
            case .integrityCheck: "index integrity check"
            case .totalsCheck: "totals check"
            }
        }

        /// What a failure of the job costs, for the log.
        var failureLevel: Logger.Level {
            switch self {
            case .trim, .stagedFlush: .error
            case .accessLogFlush: .warning
            case .checkpoint: .debug
            case .integrityCheck, .totalsCheck: .warning
            }
        }

        /// What a failure of the job means for the cache.
        var consequence: String {
            switch self {
            case .trim: "the cache stays over its limits until the next trim"
            case .accessLogFlush: "these access times are lost"
            case .stagedFlush: "the staged writes are lost"
            case .checkpoint: "the next checkpoint copies these pages"
            case .integrityCheck: "the next open checks the index again"
            case .totalsCheck: "the next trim checks the totals again"
            }
        }
    }

    private struct State {
        var queued: Set<Job> = []
        var timers: [Job: Task<Void, Never>] = [:]
        /// False once ``drain()`` has begun: no new job or timer.
        var isAccepting = true
        /// True once ``drain()`` has passed the last queued job: nothing more runs.
        var hasEnded = false
    }

    private let state = Mutex(State())
    /// Stops the job running now early, when it registered a way (``interruptible(_:_:)``).
    private let interrupter = Mutex<(@Sendable () -> Void)?>(nil)
    private let queue = DispatchQueue(label: "org.stowage.disk-cache.maintenance")
    private let logger: Logger
    /// The cache's name, for the log.
    private let name: String

    init(name: String, logger: Logger) {
        self.name = name
        self.logger = logger
    }

    /// A lane released without ``drain()`` (a cache released open) stops its sleeping timers.
    deinit {
        for timer in state.withLock({ $0.timers.values }) { timer.cancel() }
    }

    /// Whether ``drain()`` has begun.
    var isDraining: Bool { state.withLock { !$0.isAccepting } }

    /// Queues `job` unless it is queued already or the lane is draining.
    ///
    /// - Returns: Whether the job was queued.
    @discardableResult
    func schedule(_ job: Job, _ work: @escaping @Sendable () throws -> Void) -> Bool {
        let queues = state.withLock { state in
            guard state.isAccepting else { return false }
            return state.queued.insert(job).inserted
        }
        guard queues else { return false }
        queue.async { [self] in
            // Taken off before it runs: a request that comes while it runs is work it may miss.
            let hasEnded = state.withLock { state in
                state.queued.remove(job)
                return state.hasEnded
            }
            guard !hasEnded else { return }
            do {
                try work()
            } catch {
                logger.log(
                    level: job.failureLevel,
                    "\(job) failed; \(job.consequence): \(error)",
                    metadata: ["cache": "\(name)"]
                )
            }
        }
        return true
    }

    /// Queues `job` once `delay` has passed on `clock`, unless a timer for it is pending or the
    /// lane is draining. The timer holds the lane weakly.
    func schedule(
        _ job: Job,
        after delay: Duration,
        on clock: any Clock<Duration>,
        _ work: @escaping @Sendable () throws -> Void
    ) {
        state.withLock { state in
            guard state.isAccepting, state.timers[job] == nil else { return }
            state.timers[job] = Task { [weak self] in
                // Cancelled by drain() (close() commits what the job would have) or a release.
                do { try await clock.sleep(for: delay) } catch { return }
                guard let self else { return }
                self.state.withLock { _ = $0.timers.removeValue(forKey: job) }
                self.schedule(job, work)
            }
        }
    }

    /// Runs `work` on the lane, after what is queued, and waits for it; never call it from a job.
    ///
    /// - Returns: What `work` returned, or `nil` when the lane has ended (the work did not run).
    func run<T>(_ work: () throws -> T) rethrows -> T? {
        dispatchPrecondition(condition: .notOnQueue(queue))
        return try queue.sync {
            guard !state.withLock({ $0.hasEnded }) else { return nil }
            return try work()
        }
    }

    /// Runs `work` on the lane, after what is queued, and suspends until it ends.
    ///
    /// - Returns: What `work` returned, or `nil` when the lane has ended (the work did not run).
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T? {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                guard !state.withLock({ $0.hasEnded }) else { return continuation.resume(returning: nil) }
                continuation.resume(with: Result { try work() })
            }
        }
    }

    /// Runs `body`, a long job's work, so that ``drain()`` calls `interrupt` instead of waiting
    /// for it to end (at once, if draining has begun).
    func interruptible<T>(_ interrupt: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
        interrupter.withLock { $0 = interrupt }
        defer { interrupter.withLock { $0 = nil } }
        if isDraining { interrupt() }
        return try body()
    }

    /// Ends the lane: cancels the timers, refuses new jobs, interrupts a job that can be
    /// (``interruptible(_:_:)``), waits for the queued ones (and a running one) to finish. Afterwards nothing runs on the lane; draining again only waits
    /// for that.
    func drain() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let timers = state.withLock { state in
            state.isAccepting = false
            defer { state.timers = [:] }
            return Array(state.timers.values)
        }
        for timer in timers { timer.cancel() }
        // Under the lock: the job clears its interrupter before it gives back what it interrupts.
        interrupter.withLock { $0?() }
        queue.sync { state.withLock { $0.hasEnded = true } }
    }
}
