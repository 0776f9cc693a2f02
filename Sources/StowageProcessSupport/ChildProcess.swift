import CStowageSpawn
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`: the tests' and the bench's replacement for
/// Foundation's `Process`, with the members they use.
///
/// swift-corelibs-foundation's `Process` is unsafe under a suite that spawns hundreds of children
/// from many threads:
/// - `run()` lists `/proc/self/fd` by copying each `struct dirent`'s whole 256-byte `d_name`,
///   reading past glibc's buffer; it crashed the test process ("Bad pointer dereference" in
///   `memcpy` under `Process.run()`, Swift 6.3.1), as swift-corelibs-foundation PR #5472 reports
///   for about one suite run in five.
/// - `waitUntilExit()` can spin for ever on a `<defunct>` child its manager thread missed.
///
/// Here the child closes every descriptor above 2 with one spawn action (glibc's
/// `posix_spawn_file_actions_addclosefrom_np`; `POSIX_SPAWN_CLOEXEC_DEFAULT` on Darwin), and a
/// thread of the child's own reaps it with a blocking `waitpid`.
///
/// A standard stream left `nil` is `/dev/null`, never the test runner's own stream: a child that
/// outlives a crashed test process would otherwise hold `swift test`'s output pipe open, and
/// `swift test` would wait for it for ever.
public final class ChildProcess: @unchecked Sendable {
    // Invariant: the configuration (`executableURL` … `standardError`) is set by one thread before
    // `run()` and only read after; `pid` and `exit` are read and written under `state`.

    /// How the child ended, as Foundation's `Process.TerminationReason` names it.
    public enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    /// The program to run (tests run `/usr/bin/env NAME` to look a name up on `PATH`).
    public var executableURL: URL?
    /// The arguments after the program's own name.
    public var arguments: [String]?
    /// The child's environment; `nil` passes this process's own.
    public var environment: [String: String]?
    /// The child's working directory; `nil` keeps this process's.
    public var currentDirectoryURL: URL?
    /// A `Pipe` (the child reads its reading end) or a `FileHandle`; `nil` (and
    /// `FileHandle.nullDevice`, which has no descriptor on Linux) is `/dev/null`.
    public var standardInput: Any?
    /// A `Pipe` (the child writes its writing end) or a `FileHandle`; `nil` is `/dev/null`.
    public var standardOutput: Any?
    /// A `Pipe` (the child writes its writing end) or a `FileHandle`; `nil` is `/dev/null`.
    public var standardError: Any?

    private let state = NSCondition()
    private var pid: pid_t = 0
    private var exit: ChildExit?

    /// A child not yet started: configure it, then call ``run()``.
    public init() {}

    /// The child's process ID; 0 before `run()`.
    public var processIdentifier: Int32 { state.withLock { pid } }

    /// Whether the child has started and not yet been reaped.
    public var isRunning: Bool { state.withLock { pid != 0 && exit == nil } }

    /// Starts the child; throws ``SpawnError`` when it cannot be started.
    public func run() throws {
        guard let executable = executableURL?.path else { throw SpawnError(call: "run", code: EINVAL) }
        let nullDevice = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard nullDevice >= 0 else { throw SpawnError(call: "open /dev/null", code: errno) }
        defer { close(nullDevice) }
        let streams = [
            Self.descriptor(standardInput, forReading: true, nullDevice: nullDevice),
            Self.descriptor(standardOutput, forReading: false, nullDevice: nullDevice),
            Self.descriptor(standardError, forReading: false, nullDevice: nullDevice),
        ]

        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        try Self.check("posix_spawn_file_actions_init", posix_spawn_file_actions_init(&actions))
        defer { posix_spawn_file_actions_destroy(&actions) }
        try Self.check("posix_spawnattr_init", posix_spawnattr_init(&attributes))
        defer { posix_spawnattr_destroy(&attributes) }

        for (target, stream) in streams.enumerated() {
            try Self.check("adddup2", posix_spawn_file_actions_adddup2(&actions, stream.child, Int32(target)))
        }
        if let directory = currentDirectoryURL?.path {
            try Self.check("addchdir", cstowage_spawn_add_chdir(&actions, directory))
        }
        // Foundation's Process puts the child in a process group of its own; so does this. The
        // signal mask is emptied: a thread of libdispatch's may spawn with signals blocked.
        var flags = Int32(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #else
        try Self.check("addclosefrom", cstowage_spawn_add_closefrom(&actions, 3))
        #endif
        try Self.check("posix_spawnattr_setflags", posix_spawnattr_setflags(&attributes, Int16(flags)))
        try Self.check("posix_spawnattr_setpgroup", posix_spawnattr_setpgroup(&attributes, 0))
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        try Self.check("posix_spawnattr_setsigmask", posix_spawnattr_setsigmask(&attributes, &noSignals))

        let argv = Self.cStrings([executable] + (arguments ?? []))
        defer { Self.release(argv) }
        let envp = environment.map { Self.cStrings($0.map { "\($0.key)=\($0.value)" }) }
        defer { envp.map(Self.release) }

        #if canImport(Darwin)
        let inherited = _NSGetEnviron().pointee
        #else
        let inherited = environ
        #endif
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp ?? inherited)
        guard result == 0 else { throw SpawnError(call: "posix_spawn \(executable)", code: result) }
        // The child has its ends of the pipes; without closing ours, a reader never sees EOF.
        for stream in streams { try? stream.parentCloses?.close() }
        let started = child
        state.withLock { pid = started }
        Thread.detachNewThread { [self] in reap(started) }
    }

    /// Waits for the child to exit and says how it ended.
    public func waitForExitReliably() -> ChildExit {
        state.withLock {
            precondition(pid != 0, "ChildProcess: waited for before run()")
            while exit == nil { state.wait() }
            return exit!
        }
    }

    /// Waits for the child to exit.
    public func waitUntilExit() { _ = waitForExitReliably() }

    /// The exit status, or the signal's number when ``terminationReason`` is `.uncaughtSignal`;
    /// only once the child has been reaped.
    public var terminationStatus: Int32 { finishedExit().status }

    /// Whether the child exited or a signal ended it; only once it has been reaped.
    public var terminationReason: TerminationReason { finishedExit().wasSignaled ? .uncaughtSignal : .exit }

    /// Sends SIGTERM, unless the child has already been reaped (its ID may name another process).
    public func terminate() { signal(SIGTERM) }

    /// Sends SIGINT, unless the child has already been reaped.
    public func interrupt() { signal(SIGINT) }

    /// Stops the child with SIGSTOP; false once it has been reaped.
    @discardableResult
    public func suspend() -> Bool { signal(SIGSTOP) }

    /// Continues a stopped child with SIGCONT; false once it has been reaped.
    @discardableResult
    public func resume() -> Bool { signal(SIGCONT) }

    @discardableResult
    private func signal(_ number: Int32) -> Bool {
        state.withLock {
            guard pid != 0, exit == nil else { return false }
            return kill(pid, number) == 0
        }
    }

    private func finishedExit() -> ChildExit {
        state.withLock {
            guard let exit else { preconditionFailure("ChildProcess: the child is still running") }
            return exit
        }
    }

    /// Waits for `child` to end without reaping it, then reaps it under `state`: a signal sent
    /// under `state` never reaches a process that took a reaped child's ID.
    private func reap(_ child: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        state.withLock {
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1, errno == EINTR {}
            exit = Self.decode(status)
            state.broadcast()
        }
    }

    /// A `waitpid` status: exited with a code, or ended by a signal (POSIX's `WIFEXITED` and
    /// `WTERMSIG` layout, which Swift cannot import as macros).
    private static func decode(_ status: Int32) -> ChildExit {
        let signal = status & 0x7F
        if signal == 0 { return ChildExit(status: (status >> 8) & 0xFF, wasSignaled: false) }
        return ChildExit(status: signal, wasSignaled: true)
    }

    /// The descriptor the child gets for one standard stream, and the handle the parent closes
    /// once the child has it (a pipe's end that belongs to the child).
    private static func descriptor(
        _ stream: Any?,
        forReading: Bool,
        nullDevice: Int32
    ) -> (child: Int32, parentCloses: FileHandle?) {
        switch stream {
        case let pipe as Pipe:
            let end = forReading ? pipe.fileHandleForReading : pipe.fileHandleForWriting
            return (end.fileDescriptor, end)
        case let handle as FileHandle where handle.fileDescriptor >= 0:
            return (handle.fileDescriptor, nil)
        default:
            return (nullDevice, nil)
        }
    }

    private static func check(_ call: String, _ result: Int32) throws {
        guard result == 0 else { throw SpawnError(call: call, code: result) }
    }

    private static func cStrings(_ strings: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> {
        let array = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { array[index] = strdup(string) }
        array[strings.count] = nil
        return array
    }

    private static func release(_ array: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) {
        var index = 0
        while let string = array[index] {
            free(string)
            index += 1
        }
        array.deallocate()
    }
}

/// A `posix_spawn` step that failed, with its `errno` value.
public struct SpawnError: Error, CustomStringConvertible {
    /// The step that failed, e.g. `posix_spawn /usr/bin/env`.
    public var call: String
    /// The `errno` value the step returned.
    public var code: Int32

    /// The step and its error, e.g. `posix_spawn /x failed: No such file or directory (errno 2)`.
    public var description: String { "\(call) failed: \(String(cString: strerror(code))) (errno \(code))" }
}
