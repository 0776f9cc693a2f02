import ServiceLifecycle
import StowageCore

/// Ends ``WorkingMemoryCharge``'s windows on time, a quarter of a window late at most, when no
/// request begins one: the requests the event loop answers (memory and disk-index hits) never
/// reach the charge, so a proxy serving only those after a burst kept the burst's memory set
/// aside until its next miss (100 held connections left 8 MB of 16 MB set aside through 6,000
/// hits over two minutes). Runs until the task is cancelled or its service group shuts down
/// gracefully (swift-service-lifecycle's `Service`).
struct WorkingMemoryWindows: Service {
    let charge: WorkingMemoryCharge

    func run() async throws {
        await cancelWhenGracefulShutdown { [charge] in
            while !Task.isCancelled {
                do {
                    try await charge.clock.sleep(for: WorkingMemoryCharge.window / 4)
                } catch {
                    return
                }
                charge.endWindowIfDue()
            }
        }
    }
}
