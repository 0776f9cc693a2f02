import Dispatch

/// Runs blocking file-system work off Swift's cooperative thread pool.
///
/// Directory walks and `unlink` storms can block for seconds; holding a cooperative thread that
/// long starves every other task (STYLE §4). The blocking function is the real implementation;
/// the async API hands it to this concurrent dispatch queue and suspends until it finishes.
package enum BlockingWork {
    private static let queue = DispatchQueue(label: "org.stowage.blocking-io", qos: .utility, attributes: .concurrent)

    /// Runs `work` on the blocking-I/O queue and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Runs non-throwing `work` on the blocking-I/O queue and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
