import ServiceLifecycle
import StowageCore

/// Samples the proxy's request total once a second of the rate's clock into ``RequestRate``
/// while the admin listener runs, until the task is cancelled or its service group shuts down
/// gracefully (swift-service-lifecycle's `Service`).
struct StatusSampler: Service {
    let counters: ProxyCounters
    let rate: RequestRate

    func run() async throws {
        await cancelWhenGracefulShutdown { [counters, rate] in
            while !Task.isCancelled {
                rate.sample(requests: counters.snapshot.requests)
                do {
                    try await rate.clock.sleep(for: .seconds(1))
                } catch {
                    return
                }
            }
        }
    }
}
