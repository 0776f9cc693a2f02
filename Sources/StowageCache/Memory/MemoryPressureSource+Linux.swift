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
    private let wakeWriter: Int32

    /// Registers `configuration`'s trigger on the first PSI file that accepts it and starts the
    /// thread.
    ///
    /// - Throws: ``StowageError`` `.unsupported` naming every file tried and why it failed.
    static func start(
        configuration: MemoryPressureSource.Configuration,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws -> PressureWatcher {
        try start(candidates: PressureStallFiles.candidates(), trigger: configuration.trigger, onPressure: onPressure)
    }

    /// ``start(configuration:onPressure:)`` with the files and the trigger line given.
    static func start(
        candidates: [String],
        trigger: String,
        onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) throws -> PressureWatcher {
        var failures: [(path: String, errno: Errno)] = []
        for path in candidates {
            switch PressureStallFiles.arm(path, trigger: trigger) {
            case .success(let descriptor):
                return try PressureWatcher(path: path, descriptor: descriptor, onPressure: onPressure)
            case .failure(let errno):
                failures.append((path, errno))
            }
        }
        throw PressureStallFiles.unsupported(failures, trigger: trigger)
    }

    private init(
        path: String,
        descriptor: Int32,
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
        let loop = PollLoop(trigger: descriptor, wakeReader: ends[0], onPressure: onPressure)
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
    let onPressure: @Sendable (MemoryPressureLevel) -> Void

    init(trigger: Int32, wakeReader: Int32, onPressure: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        self.trigger = trigger
        self.wakeReader = wakeReader
        self.onPressure = onPressure
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
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
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
                onPressure(.warning)
            }
        }
    }
}
#endif
