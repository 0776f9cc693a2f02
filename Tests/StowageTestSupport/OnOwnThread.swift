import Foundation

/// Runs blocking `work` (a long CPU loop, a write loop, a wait for processes) on a thread of its
/// own and waits for it without holding one of Swift's cooperative threads.
///
/// The suites run in parallel and the cooperative pool has one thread per core: a test that
/// computes for seconds on it starves every other test's tasks, whose timeouts then pass. Long
/// synchronous work belongs here.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
