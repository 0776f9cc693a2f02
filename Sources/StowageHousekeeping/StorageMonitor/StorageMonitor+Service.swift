import Logging
import ServiceLifecycle

extension StorageMonitor: Service {
    /// Checks the volume every ``Configuration/interval`` on the configured wait clock, the
    /// first check at once, until the task is cancelled or its service group shuts down
    /// gracefully (swift-service-lifecycle's `Service`). A failed check is logged and the next
    /// one runs on time.
    ///
    /// ```swift
    /// let group = ServiceGroup(services: [monitor, pressure], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        let interval = configuration.interval
        let clock = configuration.waitClock
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                do {
                    try await check()
                } catch is CancellationError {
                    return
                } catch {
                    configuration.logger.error("storage check failed: \(error)")
                }
                do {
                    try await clock.sleep(for: interval)
                } catch {
                    return
                }
            }
        }
    }
}
