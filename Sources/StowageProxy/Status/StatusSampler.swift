import ServiceLifecycle

/// Samples the proxy's request total once a second into ``RequestRate`` while the admin
/// listener runs, until the task is cancelled or its service group shuts down gracefully
/// (swift-service-lifecycle's `Service`).
struct StatusSampler: Service {
    let counters: ProxyCounters
    let rate: RequestRate

    func run() async throws {
        let clock = ContinuousClock()
        await cancelWhenGracefulShutdown { [counters, rate] in
            while !Task.isCancelled {
                rate.sample(requests: counters.snapshot.requests, at: clock.now)
                do {
                    try await clock.sleep(for: .seconds(1))
                } catch {
                    return
                }
            }
        }
    }
}
