import Dispatch
import Foundation
import Synchronization

/// A `TaskExecutor` with threads of its own, the `withTaskExecutorPreference` candidate of the
/// `async-hop` scenario: jobs queue under a mutex and a semaphore wakes one of the threads.
final class DedicatedThreadExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in
                while true {
                    ready.wait()
                    guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            thread.name = "bench-executor-\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }
}
