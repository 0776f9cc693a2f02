import NIOCore
import Synchronization

/// Runs tasks on one NIO event loop: the loop a ``RedisClient``'s connections live on
/// (``RedisClient/taskExecutor``).
///
/// A task that prefers this executor writes its commands and is resumed with their replies on
/// the thread that reads the socket, so a call costs no hand-over between threads: the command
/// is written where the task runs, and the reply resumes it in the same event-loop turn that read
/// it. `redis-benchmark` gets its speed the same way, with one thread that writes, reads and
/// starts the next round. (SwiftNIO 2 has no `TaskExecutor` of its own for an event loop here.)
///
/// Once the loop's group has shut down, NIO drops what it is given to run (it prints "Cannot
/// schedule tasks on an EventLoop that has already shut down"); a task whose job was dropped
/// would never run again, and whoever awaits it would wait forever. Such a job runs on the
/// global concurrent executor instead, and so does every later one.
final class RedisEventLoopExecutor: TaskExecutor {
    let eventLoop: any EventLoop
    /// Set when the loop dropped a job: it has shut down, and later jobs skip it.
    fileprivate let loopIsGone = Atomic<Bool>(false)

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if loopIsGone.load(ordering: .relaxed) {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        let handed = HandedJob(job, executor: self)
        eventLoop.execute { handed.run() }
    }
}

/// A job handed to the event loop. When the loop releases it without running it (its group shut
/// down), it goes to the global concurrent executor from its deinit: asynchronously, since the
/// thread that releases it may be in the middle of resuming a continuation under a lock.
private final class HandedJob: @unchecked Sendable {
    // Written only by `run()` on the loop, or read by `deinit` after the loop let go of the job:
    // never both at once.
    private var job: UnownedJob?
    private let executor: RedisEventLoopExecutor

    init(_ job: UnownedJob, executor: RedisEventLoopExecutor) {
        self.job = job
        self.executor = executor
    }

    func run() {
        guard let job else { return }
        self.job = nil
        job.runSynchronously(on: executor.asUnownedTaskExecutor())
    }

    deinit {
        guard let job else { return }
        executor.loopIsGone.store(true, ordering: .relaxed)
        globalConcurrentExecutor.enqueue(ExecutorJob(job))
    }
}
