#if canImport(Darwin)
import Dispatch
import Synchronization

/// Listens to the system's memory pressure through dispatch sources (one per level, so the
/// handlers need not read the source's data).
final class PressureWatcher: Sendable {
    private let sources: Mutex<[any DispatchSourceMemoryPressure]>

    /// Starts listening; the configuration's PSI trigger does not apply here.
    static func start(
        configuration: MemoryPressureSource.Configuration,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws -> PressureWatcher {
        PressureWatcher(onPressure: onPressure)
    }

    private init(onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        let queue = DispatchQueue(label: "stowage.memory-pressure")
        let warning = DispatchSource.makeMemoryPressureSource(eventMask: .warning, queue: queue)
        warning.setEventHandler { onPressure(.warning) }
        let critical = DispatchSource.makeMemoryPressureSource(eventMask: .critical, queue: queue)
        critical.setEventHandler { onPressure(.critical) }
        warning.activate()
        critical.activate()
        sources = Mutex([warning, critical])
    }

    /// Cancels the sources; a handler already running finishes on its queue.
    func stop() {
        sources.withLock { sources in
            for source in sources { source.cancel() }
            sources.removeAll()
        }
    }
}
#elseif !(os(Linux) || os(Android))
import StowageCore

/// No memory pressure signal on this platform.
final class PressureWatcher: Sendable {
    static func start(
        configuration: MemoryPressureSource.Configuration,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws -> PressureWatcher {
        throw StowageError(
            code: .unsupported,
            message: "this platform offers no memory pressure signal Stowage can watch; "
                + "call MemoryPressureSource.notify(_:) or MemoryCache.handleMemoryPressure(_:) yourself"
        )
    }

    func stop() {}
}
#endif
