#if os(Linux) || os(Android)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif
import StowageCore

/// Waits for a PSI trigger on a thread of its own and reports each firing as a warning.
///
/// The thread blocks in `poll(2)` on the trigger (`POLLPRI`) and on a pipe that ``stop()``
/// writes to; it owns the trigger descriptor and the pipe's read end and closes them as it ends.
final class PressureWatcher: Sendable {
    /// The PSI file the trigger is registered on.
    let path: String
    private let thread: pthread_t
    /// The write end of the pipe ``stop()`` writes to and closes.
    let wakeWriter: Int32
    /// The pipe's read end, which the thread polls beside the trigger and closes as it ends.
    let wakeReader: Int32

    /// Registers `configuration`'s trigger on the first PSI file that accepts it and starts the
    /// thread.
    ///
    /// - Throws: `StowageError` `.unsupported` naming every file tried and why it failed.
    static func start(
        configuration: MemoryPressureSource.Configuration,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws -> PressureWatcher {
        try start(
            candidates: configuration.stallFiles ?? PressureStallFiles.candidates(),
            configuration: configuration,
            onPressure: onPressure
        )
    }

    /// ``start(configuration:onPressure:)`` with the files given.
    ///
    /// Arms the trigger on the first file that accepts it; with a ``MemoryPressureSource/Configuration/pollInterval``
    /// and no file accepting it, polls the averages of the first readable one instead.
    static func start(
        candidates: [String],
        configuration: MemoryPressureSource.Configuration,
        trigger: String? = nil,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws -> PressureWatcher {
        let trigger = trigger ?? configuration.trigger
        var failures: [(path: String, errno: Errno)] = []
        for path in candidates {
            switch PressureStallFiles.arm(path, trigger: trigger) {
            case .success(let descriptor):
                return try PressureWatcher(
                    path: path,
                    descriptor: descriptor,
                    configuration: configuration,
                    onPressure: onPressure
                )
            case .failure(let errno):
                failures.append((path, errno))
            }
        }
        if configuration.pollInterval != nil {
            for path in candidates {
                let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                if descriptor >= 0 {
                    return try PressureWatcher(
                        path: path,
                        descriptor: descriptor,
                        configuration: configuration,
                        onPressure: onPressure
                    )
                }
            }
        }
        throw PressureStallFiles.unsupported(failures, trigger: trigger)
    }

    /// Starts the thread polling `descriptor`, already armed, for `POLLPRI`; the watcher owns it
    /// from here on, and closes it even when this throws.
    ///
    /// - Parameters:
    ///   - path: The file `descriptor` is open on, for errors.
    ///   - descriptor: A PSI file with a trigger registered, or (with a
    ///     ``MemoryPressureSource/Configuration/pollInterval``) one merely open for reading.
    ///   - configuration: The thresholds and the poll interval.
    ///   - readAverages: Reads the averages from `descriptor` when the trigger fires or the
    ///     interval passes. Default: the PSI file's contents (``PressureStallFiles/averages(of:)``).
    ///   - onPressure: Called on the watcher's thread with each level worth notifying.
    /// - Throws: `StowageError` when the pipe or the thread cannot be created.
    init(
        path: String,
        descriptor: Int32,
        configuration: MemoryPressureSource.Configuration,
        readAverages: @escaping @Sendable (Int32) -> PressureStallFiles.Averages? = PressureStallFiles.averages(of:),
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws {
        var ends: [Int32] = [-1, -1]
        // pipe(2), not pipe2: Glibc's module hides the _GNU_SOURCE declarations.
        guard pipe(&ends) == 0 else {
            let error = Errno.current
            close(descriptor)
            throw StowageError.syscall(error, "create a pipe to stop the memory pressure watcher for", path: path)
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let loop = PollLoop(
            trigger: descriptor,
            wakeReader: ends[0],
            configuration: configuration,
            readAverages: readAverages,
            onPressure: onPressure
        )
        let context = Unmanaged.passRetained(loop).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { context in
                Unmanaged<PollLoop>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            },
            context
        )
        guard result == 0 else {
            Unmanaged<PollLoop>.fromOpaque(context).release()
            close(descriptor)
            close(ends[0])
            close(ends[1])
            throw StowageError.syscall(
                Errno(rawValue: result),
                "start a thread to watch memory pressure in",
                path: path
            )
        }
        self.path = path
        self.thread = thread
        self.wakeWriter = ends[1]
        self.wakeReader = ends[0]
    }

    /// Ends the thread and waits for it (unless called from that thread, e.g. by a handler,
    /// in which case it ends once the handler returns). Call once.
    func stop() {
        var byte: UInt8 = 1
        while write(wakeWriter, &byte, 1) < 0 && errno == EINTR {}
        close(wakeWriter)
        if pthread_equal(pthread_self(), thread) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }
}

/// The watcher thread's body.
private final class PollLoop: Sendable {
    let trigger: Int32
    let wakeReader: Int32
    let configuration: MemoryPressureSource.Configuration
    let readAverages: @Sendable (Int32) -> PressureStallFiles.Averages?
    let onPressure: @Sendable (MemoryPressureLevel) -> Void

    init(
        trigger: Int32,
        wakeReader: Int32,
        configuration: MemoryPressureSource.Configuration,
        readAverages: @escaping @Sendable (Int32) -> PressureStallFiles.Averages?,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) {
        self.trigger = trigger
        self.wakeReader = wakeReader
        self.configuration = configuration
        self.readAverages = readAverages
        self.onPressure = onPressure
    }

    /// The file's averages now; `nil` when it cannot be read or parsed.
    func averages() -> PressureStallFiles.Averages? {
        readAverages(trigger)
    }

    /// A fired trigger's level: critical when `full avg10` has reached the threshold.
    func levelOfFiring() -> MemoryPressureLevel {
        guard let averages = averages(), averages.fullAverage10 >= configuration.criticalFullAverage else {
            return .warning
        }
        return .critical
    }

    /// A poll's level: from the averages alone, `nil` when neither threshold is reached.
    func levelOfAverages() -> MemoryPressureLevel? {
        guard let averages = averages() else { return nil }
        if averages.fullAverage10 >= configuration.criticalFullAverage { return .critical }
        if averages.someAverage10 >= configuration.warningSomeAverage { return .warning }
        return nil
    }

    static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Polls until the pipe becomes readable (a byte, or end of file).
    func run() {
        var descriptors = [
            pollfd(fd: trigger, events: Int16(POLLPRI), revents: 0),
            pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0),
        ]
        defer {
            close(trigger)
            close(wakeReader)
        }
        let timeout =
            configuration.pollInterval.map { interval in
                Int32(
                    clamping: max(
                        1,
                        interval.components.seconds * 1_000 + interval.components.attoseconds / 1_000_000_000_000_000
                    )
                )
            } ?? -1
        let window =
            Double(configuration.window.components.seconds)
            + Double(configuration.window.components.attoseconds) / 1e18
        var lastNotified: (level: MemoryPressureLevel, at: Double)?
        func notify(_ level: MemoryPressureLevel) {
            // At most once per window, as the kernel fires its triggers, unless it escalates.
            let now = Self.monotonicSeconds()
            if let last = lastNotified, now - last.at < window, last.level == level || level == .warning { return }
            lastNotified = (level, now)
            onPressure(level)
        }
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready == 0 {
                if let level = levelOfAverages() { notify(level) }
                continue
            }
            if ready < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                // Keep waiting for stop() alone rather than spin on a failing trigger.
                descriptors[0].fd = -1
                continue
            }
            if descriptors[1].revents != 0 { return }
            let events = Int32(descriptors[0].revents)
            if events & Int32(POLLERR | POLLNVAL) != 0 {
                // The trigger is gone (e.g. the cgroup was removed): wait for stop() alone.
                descriptors[0].fd = -1
            } else if events & Int32(POLLPRI) != 0 {
                notify(levelOfFiring())
            }
        }
    }
}
#endif
