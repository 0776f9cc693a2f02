import Logging
import StowageCore
import StowageRedis
import Synchronization

/// The tier's circuit breaker (Nygard, "Release It!"): bounds each call to Redis by the
/// request budget, opens on the first call that runs out of it or cannot reach Redis, fails
/// calls at once while open, and probes Redis in the background with backoff until it answers
/// (see ``RedisSharedTier/Options``).
///
/// A stopped Redis keeps its TCP connections open, so the client's own pool never notices: each
/// command waits for its full command timeout (5 s by default), and a cache miss makes four or
/// five of them in a row.
final class CircuitBreaker: Sendable {
    private struct State {
        var probe: Task<Void, Never>?
        var isCancelled = false
    }

    private let isOpenFlag = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let options: RedisSharedTier.Options
    private let probe: @Sendable () async throws -> Void
    private let logger: Logger
    /// Bounds every call, the probes included, by ``RedisSharedTier/Options/requestBudget``.
    private let watchdog: BudgetWatchdog

    /// - Parameter probe: Asks Redis something cheap; bounded by the request budget here.
    init(options: RedisSharedTier.Options, logger: Logger, probe: @escaping @Sendable () async throws -> Void) {
        self.options = options
        self.logger = logger
        self.probe = probe
        watchdog = BudgetWatchdog(budget: options.requestBudget, clock: ElapsedClock(options.requestBudgetClock))
    }

    /// Whether calls fail at once now.
    var isOpen: Bool { isOpenFlag.load(ordering: .acquiring) }

    /// Runs `body` within the request budget, or throws at once while the breaker is open. A
    /// failure to reach Redis, or the budget running out, opens it.
    @discardableResult
    func run<T: Sendable>(_ operation: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        if isOpen {
            var error = RedisError(
                code: .connectionFailed,
                message: "Redis did not answer recently, so the shared tier fails \(operation) at once until a "
                    + "background probe gets an answer; the caches go on with memory and disk"
            )
            error.wasNotSent = true
            throw error
        }
        do {
            return try await within(operation, body)
        } catch {
            if Self.opens(on: error) { open(after: error, operation: operation) }
            throw error
        }
    }

    /// Closes the breaker: Redis answered on another path (the invalidation channel came back).
    func close() {
        guard isOpenFlag.exchange(false, ordering: .acquiringAndReleasing) else { return }
        state.withLock { $0.probe?.cancel() }
        logger.notice("shared tier: Redis answers again; circuit breaker closed")
    }

    /// Stops probing for good (the tier shuts down).
    func cancel() {
        state.withLock { state in
            state.isCancelled = true
            state.probe?.cancel()
        }
    }

    private func open(after error: any Error, operation: String) {
        guard !isOpenFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        logger.warning(
            "shared tier: Redis did not answer; circuit breaker open, calls fail at once until a probe succeeds",
            metadata: ["operation": "\(operation)", "error": "\(error)"]
        )
        state.withLock { state in
            guard !state.isCancelled else { return }
            state.probe?.cancel()
            state.probe = Task { [weak self] in await self?.probeUntilClosed() }
        }
    }

    private func probeUntilClosed() async {
        var pause = options.firstProbeDelay
        let clock = options.probeClock
        while isOpen, !Task.isCancelled {
            do { try await clock.sleep(for: pause) } catch { return }
            guard isOpen else { return }
            do {
                try await within("probe", probe)
                close()
                return
            } catch {
                pause = min(pause * 2, options.maximumProbeDelay)
            }
        }
    }

    /// Failures that say Redis cannot be reached or does not answer; an error reply (a wrong
    /// type, a script error) is an answer and leaves the breaker closed.
    static func opens(on error: any Error) -> Bool {
        guard let error = error as? RedisError else { return false }
        return error.code == .timeout || error.code == .connectionFailed || error.code == .connectionClosed
            || error.code == .poolExhausted || error.code == .clusterUnavailable
    }

    /// `body`'s result, or a `.timeout` error once the request budget has passed (see
    /// ``BudgetWatchdog/within(_:_:)``).
    func within<T: Sendable>(_ operation: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await watchdog.within(operation, body)
    }

    /// Whether the watchdog that times calls out runs now; it stops once no call is in flight.
    var isWatchdogRunning: Bool { watchdog.isWatching }

    /// How many calls the watchdog times now (tests wait for their calls to be in its table).
    var callsInBudget: Int { watchdog.callsInFlight }

    /// How many calls, the probes included, have been given the budget since the breaker was made.
    var callsStartedInBudget: UInt64 { watchdog.callsStarted }
}
