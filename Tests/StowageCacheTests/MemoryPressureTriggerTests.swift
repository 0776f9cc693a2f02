#if os(Linux)
import Foundation
import Glibc
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

/// The default Linux path of ``MemoryPressureSource``: a PSI trigger polled for `POLLPRI`.
///
/// The kernel fires a trigger only after real memory stalls (the kernel's
/// Documentation/accounting/psi.rst, "Monitoring for pressure thresholds"), which a test cannot
/// cause within seconds. So the `POLLPRI` branch is driven through a descriptor that raises it on
/// demand — a loopback TCP socket that receives out-of-band data (tcp(7), "Out-of-band data") —
/// and the real trigger is checked for arming, running and stopping where the kernel accepts it.
@Suite struct MemoryPressureTriggerTests {
    @Test(
        "POLLPRI on the trigger notifies the level its averages give, and stopping ends the thread and closes every descriptor"
    )
    func pollPriorityNotifies() async throws {
        let pair = try UrgentSocketPair()
        defer { close(pair.sender) }
        let averages = Mutex<PressureStallFiles.Averages?>(nil)
        let firings = Mutex(0)
        let started = Mutex<PressureWatcher?>(nil)
        let source = MemoryPressureSource(configuration: .init(window: .seconds(60))) { configuration, onPressure in
            let watcher = try PressureWatcher(
                path: "loopback TCP socket receiving out-of-band data",
                descriptor: pair.receiver,
                configuration: configuration,
                readAverages: { descriptor in
                    // Taking the urgent byte clears POLLPRI, as the kernel clears a PSI trigger's
                    // event once poll(2) has reported it.
                    var byte: UInt8 = 0
                    _ = recv(descriptor, &byte, 1, Int32(MSG_OOB))
                    firings.withLock { $0 += 1 }
                    return averages.withLock { $0 }
                },
                onPressure: onPressure
            )
            started.withLock { $0 = watcher }
            return watcher
        }
        let recorder = LevelRecorder()
        source.register(recorder)
        let watching = Task { try await source.run() }
        try await eventually { source.isRunning }
        // What the watcher's descriptors refer to while it runs: the trigger, and the pipe
        // (both ends) stop() wakes it through.
        let watcher = try #require(started.withLock { $0 })
        let held = [pair.receiver, watcher.wakeReader, watcher.wakeWriter].compactMap(OpenDescriptors.target(of:))
        try #require(held.count == 3)
        #expect(held[0] == "socket:[\(pair.receiverInode)]")
        #expect(held[1].hasPrefix("pipe:[") && held[1] == held[2])

        // No averages to read: a firing is a warning.
        try pair.raisePriority()
        try await eventually { recorder.levels == [.warning] }

        // `full avg10` at the critical threshold: critical, though within the window.
        averages.withLock {
            $0 = PressureStallFiles.Averages(parsing: "some avg10=40.00\nfull avg10=10.00")
        }
        try pair.raisePriority()
        try await eventually { recorder.levels == [.warning, .critical] }

        // A warning within the window after it is read but not notified.
        averages.withLock { $0 = PressureStallFiles.Averages(parsing: "some avg10=40.00\nfull avg10=0.00") }
        try pair.raisePriority()
        try await eventually { firings.withLock { $0 } == 3 }
        #expect(recorder.levels == [.warning, .critical])

        watching.cancel()
        try await watching.value
        #expect(!source.isRunning)

        // run() returned after stop() joined the thread, which closes the trigger and its end of
        // the wake pipe; stop() closed the other. Counted by what the descriptors refer to, not
        // by number: other tests open descriptors in parallel, and a number can be reused.
        let after = try OpenDescriptors()
        #expect(after.targets.filter(held.contains).isEmpty, "descriptors left open: \(held)")
        #expect(after.targets.contains("socket:[\(pair.senderInode)]"))
    }

    @Test("stop() from a handler on the watcher's thread ends the thread once the handler returns")
    func stopFromHandler() async throws {
        let pair = try UrgentSocketPair()
        defer { close(pair.sender) }
        let watcher = Mutex<PressureWatcher?>(nil)
        let stopped = Mutex(false)
        let started = try PressureWatcher(
            path: "loopback TCP socket receiving out-of-band data",
            descriptor: pair.receiver,
            configuration: .init(),
            readAverages: { descriptor in
                var byte: UInt8 = 0
                _ = recv(descriptor, &byte, 1, Int32(MSG_OOB))
                return nil
            },
            onPressure: { _ in
                watcher.withLock { $0.take() }?.stop()
                stopped.withLock { $0 = true }
            }
        )
        let held = ["socket:[\(pair.receiverInode)]", OpenDescriptors.target(of: started.wakeReader)]
        watcher.withLock { $0 = started }
        try pair.raisePriority()
        try await eventually { stopped.withLock { $0 } }
        // The detached thread closes the trigger and the pipe as it ends.
        try await eventually {
            try OpenDescriptors().targets.filter(held.contains).isEmpty
        }
    }

    @Test(
        "where the kernel accepts a PSI trigger, the watcher arms it on the first file that takes it and stops",
        .enabled(if: KernelTrigger.probe.isArmable, Comment(rawValue: KernelTrigger.probe.reason))
    )
    func realTriggerArmsAndStops() async throws {
        // `run()` over the default trigger is `MemoryPressureSourceTests.runWatchesOrExplains`;
        // here the arming itself, twice (a stopped watcher leaves the file armable again).
        for _ in 0..<2 {
            let watcher = try PressureWatcher.start(configuration: .init()) { _ in }
            #expect(watcher.path == KernelTrigger.probe.armablePath)
            watcher.stop()
        }
    }

    @Test(
        "where the kernel accepts no PSI trigger, run throws unsupported naming every file tried",
        .enabled(if: !KernelTrigger.probe.isArmable, "the kernel accepts a PSI trigger here")
    )
    func refusedTriggerExplains() async throws {
        let source = MemoryPressureSource()
        let error = await #expect(throws: StowageError.self) { try await source.run() }
        #expect(error?.code == .unsupported)
        for path in PressureStallFiles.candidates() {
            #expect(error?.message.contains(path) == true)
        }
        #expect(error?.message.contains("MemoryPressureSource.notify") == true)
        #expect(!source.isRunning)
    }
}

/// Whether this kernel lets the process register the default trigger, found once by writing it
/// to each PSI file as the watcher does.
private enum KernelTrigger {
    struct Probe {
        var armablePath: String?
        var reason: String
        var isArmable: Bool { armablePath != nil }
    }

    static let probe: Probe = {
        var refusals: [String] = []
        for path in PressureStallFiles.candidates() {
            switch PressureStallFiles.arm(path, trigger: MemoryPressureSource.Configuration().trigger) {
            case .success(let descriptor):
                close(descriptor)
                return Probe(armablePath: path, reason: "'\(path)' accepts the trigger")
            case .failure(let errno):
                refusals.append("'\(path)': \(errno)")
            }
        }
        return Probe(armablePath: nil, reason: "no PSI file accepts a trigger: " + refusals.joined(separator: "; "))
    }()
}

/// A loopback TCP connection whose receiving end polls `POLLPRI` while out-of-band data waits.
private struct UrgentSocketPair {
    let receiver: Int32
    let sender: Int32
    let receiverInode: UInt64
    let senderInode: UInt64

    init() throws {
        let listener = makeTCPSocket()
        guard listener >= 0 else { throw TestFailure("socket: \(Errno.current)") }
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else { throw TestFailure("listen on loopback: \(Errno.current)") }
        let sender = makeTCPSocket()
        guard sender >= 0 else { throw TestFailure("socket: \(Errno.current)") }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(sender, $0, length) == 0 }
        }
        let receiver = connected ? accept(listener, nil, nil) : -1
        guard receiver >= 0 else {
            let error = Errno.current
            close(sender)
            throw TestFailure("connect on loopback: \(error)")
        }
        _ = fcntl(receiver, F_SETFD, FD_CLOEXEC)
        self.receiver = receiver
        self.sender = sender
        receiverInode = Self.inode(of: receiver)
        senderInode = Self.inode(of: sender)
    }

    /// Sends one byte of out-of-band data, which makes the receiver poll `POLLPRI`.
    func raisePriority() throws {
        var byte = UInt8(ascii: "!")
        guard send(sender, &byte, 1, Int32(MSG_OOB | MSG_NOSIGNAL)) == 1 else {
            throw TestFailure("send out-of-band: \(Errno.current)")
        }
    }

    private static func inode(of descriptor: Int32) -> UInt64 {
        var status = stat()
        _ = fstat(descriptor, &status)
        return UInt64(status.st_ino)
    }
}

/// The process's open descriptors, by what each refers to (`/proc/self/fd`'s link targets,
/// e.g. `socket:[inode]`, `pipe:[inode]`).
private struct OpenDescriptors {
    static let directory = "/proc/self/fd"

    var targets: [String]

    init() throws {
        targets = try FileManager.default.contentsOfDirectory(atPath: Self.directory).compactMap {
            // A descriptor closed since the listing (the listing's own among them) has no link.
            try? FileManager.default.destinationOfSymbolicLink(atPath: Self.directory + "/" + $0)
        }
    }

    /// What `descriptor` refers to; `nil` when it is not open.
    static func target(of descriptor: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(descriptor)")
    }
}

/// Remembers the levels it was notified of.
private final class LevelRecorder: MemoryPressureHandling {
    private let received = Mutex<[MemoryPressureLevel]>([])
    var levels: [MemoryPressureLevel] { received.withLock { $0 } }
    func handleMemoryPressure(_ level: MemoryPressureLevel) { received.withLock { $0.append(level) } }
}
#endif
