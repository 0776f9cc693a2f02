import ServiceLifecycle

extension MemoryPressureSource: Service {
    /// Watches the system's memory pressure until the task is cancelled or its service group
    /// shuts down gracefully, then stops watching and returns (swift-service-lifecycle's
    /// `Service`). It can run again after it returns.
    ///
    /// - Throws: `StowageError` with code `.busy` when the source is already running, or
    ///   `.unsupported` when the platform offers no signal (on Linux: no PSI in the kernel, or
    ///   the trigger was refused); the message names the files tried and why each failed.
    ///   ``notify(_:)`` and ``MemoryCache/handleMemoryPressure(_:)`` keep working.
    public func run() async throws {
        try startWatching()
        defer { stopWatching() }
        try? await gracefulShutdown()
    }
}
