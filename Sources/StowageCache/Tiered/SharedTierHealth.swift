import Foundation
import Logging
import Metrics
import Synchronization

/// Tracks whether a shared level is reachable: logs once when an outage starts and once when
/// it ends (not per failed call), and counts failed calls.
///
/// Metric: `stowage_cache_shared_tier_failures_total` (dimension `cache`).
package final class SharedTierHealth: Sendable {
    private let isDown = Atomic<Bool>(false)
    /// When the current outage began, in milliseconds since 1970; 0 while the level answers.
    private let outageStartMilliseconds = Atomic<Int64>(0)
    private let failureCount = Atomic<Int>(0)
    private let now: @Sendable () -> Date
    private let failures: Counter
    private let logger: Logger
    private let name: String
    private let recovery = Mutex<(@Sendable () -> Void)?>(nil)

    /// - Parameter now: The time an outage is dated by (the level's cache clock).
    package init(name: String, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) {
        self.name = name
        self.logger = logger
        self.now = now
        failures = Counter(label: "stowage_cache_shared_tier_failures_total", dimensions: [("cache", name)])
    }

    package var failureTotal: Int { failureCount.load(ordering: .relaxed) }

    /// Whether the last call to the level succeeded (`true` before the first call).
    package var isHealthy: Bool { !isDown.load(ordering: .relaxed) }

    /// When the current outage began (its first failed call); `nil` while the level answers.
    package var outageStart: Date? {
        guard isDown.load(ordering: .relaxed) else { return nil }
        let milliseconds = outageStartMilliseconds.load(ordering: .relaxed)
        return milliseconds == 0 ? nil : Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }

    /// Runs `handler` each time the shared level answers again after an outage.
    package func whenRecovered(_ handler: @escaping @Sendable () -> Void) {
        recovery.withLock { $0 = handler }
    }

    package func recordSuccess() {
        guard isDown.load(ordering: .relaxed) else { return }
        if isDown.exchange(false, ordering: .relaxed) {
            outageStartMilliseconds.store(0, ordering: .relaxed)
            logger.notice("shared cache tier reachable again; using it", metadata: ["cache": "\(name)"])
            recovery.withLock { $0 }?()
        }
    }

    package func recordFailure(_ error: any Error, operation: String) {
        failureCount.add(1, ordering: .relaxed)
        failures.increment()
        if !isDown.exchange(true, ordering: .relaxed) {
            outageStartMilliseconds.store(Int64(now().timeIntervalSince1970 * 1_000), ordering: .relaxed)
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
