import NIOCore

/// Runs tasks on one NIO event loop: the loop a ``RedisClient``'s connections live on
/// (``RedisClient/taskExecutor``).
///
/// A task that prefers this executor writes its commands and is resumed with their replies on
/// the thread that reads the socket, so a call costs no hand-over between threads: the command
/// is written where the task runs, and the reply resumes it in the same event-loop turn that read
/// it. `redis-benchmark` gets its speed the same way, with one thread that writes, reads and
/// starts the next round. (SwiftNIO 2 has no `TaskExecutor` of its own for an event loop here.)
final class RedisEventLoopExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
