import Logging
import Metrics
import Synchronization

/// Tracks whether a shared level is reachable: logs once when an outage starts and once when
/// it ends (not per failed call), and counts failed calls.
///
/// Metric: `stowage_cache_shared_tier_failures_total` (dimension `cache`).
package final class SharedTierHealth: Sendable {
    private let isDown = Atomic<Bool>(false)
    private let failureCount = Atomic<Int>(0)
    private let failures: Counter
    private let logger: Logger
    private let name: String
    private let recovery = Mutex<(@Sendable () -> Void)?>(nil)

    package init(name: String, logger: Logger) {
        self.name = name
        self.logger = logger
        failures = Counter(label: "stowage_cache_shared_tier_failures_total", dimensions: [("cache", name)])
    }

    package var failureTotal: Int { failureCount.load(ordering: .relaxed) }

    /// Runs `handler` each time the shared level answers again after an outage.
    package func whenRecovered(_ handler: @escaping @Sendable () -> Void) {
        recovery.withLock { $0 = handler }
    }

    package func recordSuccess() {
        guard isDown.load(ordering: .relaxed) else { return }
        if isDown.exchange(false, ordering: .relaxed) {
            logger.notice("shared cache tier reachable again; using it", metadata: ["cache": "\(name)"])
            recovery.withLock { $0 }?()
        }
    }

    package func recordFailure(_ error: any Error, operation: String) {
        failureCount.add(1, ordering: .relaxed)
        failures.increment()
        if !isDown.exchange(true, ordering: .relaxed) {
            logger.warning(
                "shared cache tier unreachable; serving from memory and disk until it is back",
                metadata: ["cache": "\(name)", "operation": "\(operation)", "error": "\(error)"]
            )
        }
    }

    /// Runs `body` against the shared level; a failure is recorded and becomes `nil`.
    package func call<T: Sendable>(_ operation: String, _ body: () async throws -> T) async -> T? {
        do {
            let result = try await body()
            recordSuccess()
            return result
        } catch {
            recordFailure(error, operation: operation)
            return nil
        }
    }
}
