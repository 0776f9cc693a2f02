import StowageCore
import Synchronization

/// Tells registered caches when the system runs short of memory.
///
/// Every ``MemoryCache`` registers with ``shared`` unless configured otherwise. Nothing is
/// watched until the app runs the source — it is a swift-service-lifecycle `Service`, so add it
/// to the app's `ServiceGroup` or run it in a task of its own; ``notify(_:)`` works either way,
/// so an app can forward a signal of its own (a UIKit memory warning, a container
/// orchestrator's hint).
///
/// ```swift
/// let pressure = Task {
///     do {
///         try await MemoryPressureSource.shared.run()
///     } catch let error as StowageError where error.code == .unsupported {
///         logger.notice("no memory pressure signal: \(error.message)")
///     }
/// }
/// // …
/// pressure.cancel()
/// ```
///
/// - On Linux it watches the kernel's pressure stall information (PSI): the process's cgroup v2
///   `memory.pressure`, or else the system-wide `/proc/pressure/memory`. A trigger fires when
///   tasks stall on memory for ``Configuration/stallThreshold`` within
///   ``Configuration/window``; each firing notifies ``MemoryPressureLevel/warning``. A thread of
///   its own waits for it, never one of Swift's cooperative threads.
/// - On Apple platforms it listens to a dispatch memory-pressure source (warning and critical).
///
/// Handlers run on the watcher's thread (or the caller of ``notify(_:)``), outside the source's
/// lock.
public final class MemoryPressureSource: Sendable {
    /// What makes the Linux watcher fire. Ignored on Apple platforms, whose system decides.
    public struct Configuration: Sendable, Hashable {
        /// How long tasks must have stalled on memory within ``window`` for the trigger to
        /// fire. Default 150 ms, the kernel documentation's example.
        public var stallThreshold: Duration
        /// The window stalls are summed over, 0.5 s to 10 s. Default 2 s: without
        /// `CAP_SYS_RESOURCE` the kernel accepts only multiples of 2 s, and it fires at most
        /// once per window.
        public var window: Duration
        /// A firing is ``MemoryPressureLevel/critical`` when the file's `full avg10` — the share
        /// of the last 10 s in which every task stalled on memory — is at least this percentage.
        /// Default 10.
        public var criticalFullAverage: Double
        /// When ``pollInterval`` is set, the averages are also read that often, and `some avg10`
        /// at or above this percentage notifies ``MemoryPressureLevel/warning`` (at most once per
        /// ``window``). Default 10.
        public var warningSomeAverage: Double
        /// How often to read the averages besides waiting for the trigger; `nil` (the default)
        /// for the trigger alone. With it, a system that refuses triggers (no
        /// `CAP_SYS_RESOURCE` for a short window, a read-only `/proc`) is still watched.
        public var pollInterval: Duration?
        /// The PSI files to try, in order; `nil` (the default) for the process's cgroup v2
        /// `memory.pressure`, then `/proc/pressure/memory`.
        public var stallFiles: [String]?

        /// A trigger of `stallThreshold` stalled within `window`.
        ///
        /// - Parameters:
        ///   - stallThreshold: Stall time that fires the trigger. Default 150 ms.
        ///   - window: The window, 0.5 s to 10 s. Default 2 s.
        public init(stallThreshold: Duration = .milliseconds(150), window: Duration = .seconds(2)) {
            self.stallThreshold = stallThreshold
            self.window = window
            criticalFullAverage = 10
            warningSomeAverage = 10
            pollInterval = nil
            stallFiles = nil
        }

        /// The trigger line PSI expects: `some <stall µs> <window µs>`.
        var trigger: String {
            "some \(Self.microseconds(stallThreshold)) \(Self.microseconds(window))"
        }

        private static func microseconds(_ duration: Duration) -> Int64 {
            duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        }
    }

    /// The source every ``MemoryCache`` registers with by default, with the default
    /// ``Configuration``.
    public static let shared = MemoryPressureSource()

    /// The trigger the Linux watcher uses.
    public let configuration: Configuration

    private struct Registration {
        weak var handler: (any MemoryPressureHandling)?
    }

    private struct State: ~Copyable {
        var registrations: [Registration] = []
        var watcher: PressureWatcher?
    }

    private let state = Mutex(State())

    /// Starts the watcher: the platform's (``PressureWatcher/start(configuration:onPressure:)``),
    /// or one polling a descriptor the creator armed.
    private let startWatcher: WatcherStart

    /// How ``run()`` starts watching: given the configuration and the callback that notifies
    /// the handlers, a running watcher, or a `StowageError` saying why there is none.
    typealias WatcherStart =
        @Sendable (
            Configuration,
            @escaping @Sendable (MemoryPressureLevel) -> Void
        ) throws -> PressureWatcher

    /// A source that watches nothing until it runs (``run()``).
    ///
    /// - Parameter configuration: The Linux PSI trigger. Default: 150 ms stalled within 2 s.
    public convenience init(configuration: Configuration = Configuration()) {
        self.init(configuration: configuration) { configuration, onPressure in
            try PressureWatcher.start(configuration: configuration, onPressure: onPressure)
        }
    }

    /// A source whose ``run()`` starts the watcher `startWatcher` returns, e.g. one polling a
    /// descriptor the caller armed.
    ///
    /// - Parameters:
    ///   - configuration: Passed to `startWatcher`.
    ///   - startWatcher: Starts watching; called by each ``run()``.
    init(configuration: Configuration = Configuration(), startWatcher: @escaping WatcherStart) {
        self.configuration = configuration
        self.startWatcher = startWatcher
    }

    deinit {
        state.withLock { $0.watcher.take() }?.stop()
    }

    // MARK: - Handlers

    /// Adds `handler`, held weakly, to those notified; registering it again does nothing.
    ///
    /// - Parameter handler: An object that releases memory on pressure, e.g. a ``MemoryCache``.
    public func register(_ handler: any MemoryPressureHandling) {
        state.withLock { state in
            state.registrations.removeAll { $0.handler == nil }
            if !state.registrations.contains(where: { $0.handler === handler }) {
                state.registrations.append(Registration(handler: handler))
            }
        }
    }

    /// Stops notifying `handler`.
    ///
    /// - Parameter handler: An object passed to ``register(_:)`` before.
    public func unregister(_ handler: any MemoryPressureHandling) {
        state.withLock { state in
            state.registrations.removeAll { $0.handler == nil || $0.handler === handler }
        }
    }

    /// Calls ``MemoryPressureHandling/handleMemoryPressure(_:)`` on every registered handler
    /// that still exists, on the calling thread.
    ///
    /// - Parameter level: How hard the system is pressed.
    public func notify(_ level: MemoryPressureLevel) {
        let handlers = state.withLock { state in
            state.registrations.removeAll { $0.handler == nil }
            return state.registrations.compactMap(\.handler)
        }
        for handler in handlers {
            handler.handleMemoryPressure(level)
        }
    }

    // MARK: - Watching the system

    /// Whether the system's signal is being watched.
    public var isRunning: Bool { state.withLock { $0.watcher != nil } }

    /// Starts watching the system's memory pressure.
    ///
    /// - Throws: `StowageError` with code `.busy` when the source is already watching (run it
    ///   once), or `.unsupported` when the platform offers no signal.
    func startWatching() throws {
        // Registering the trigger touches files, so it happens outside the lock; if another
        // caller won the race meanwhile, the extra watcher is stopped again.
        guard !isRunning else { throw Self.alreadyRunning() }
        let watcher = try startWatcher(configuration) { [weak self] level in
            self?.notify(level)
        }
        let extra = state.withLock { state -> PressureWatcher? in
            guard state.watcher == nil else { return watcher }
            state.watcher = watcher
            return nil
        }
        if let extra {
            extra.stop()
            throw Self.alreadyRunning()
        }
    }

    private static func alreadyRunning() -> StowageError {
        StowageError(
            code: .busy,
            message: "the memory pressure source is already running; run it once and share it"
        )
    }

    /// Stops watching and waits for the watcher's thread to end; does nothing if not watching.
    func stopWatching() {
        state.withLock { $0.watcher.take() }?.stop()
    }
}
