import Synchronization

/// A flag that an async caller's cancellation handler sets and a blocking loop polls.
package final class CancellationFlag: Sendable {
    private let isSet = Atomic<Bool>(false)

    package init() {}

    /// Asks the blocking work to stop at its next check.
    package func cancel() { isSet.store(true, ordering: .relaxed) }

    /// Whether ``cancel()`` has been called.
    package var isCancelled: Bool { isSet.load(ordering: .relaxed) }

    /// Throws `CancellationError` once ``cancel()`` has been called.
    package func check() throws {
        if isCancelled { throw CancellationError() }
    }
}
