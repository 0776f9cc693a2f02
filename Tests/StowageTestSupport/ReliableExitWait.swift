import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a child process ended.
public struct ChildExit: Sendable, Equatable {
    /// The exit status, or the signal's number when ``wasSignaled``; -1 when unknown.
    public var status: Int32
    /// Whether a signal ended the child (SIGKILL in the crash tests).
    public var wasSignaled: Bool

    /// An exit with `status`, or by the signal `status` when `wasSignaled`.
    public init(status: Int32, wasSignaled: Bool) {
        self.status = status
        self.wasSignaled = wasSignaled
    }
}

extension Process {
    /// Waits for the child to exit and says how it ended, without trusting Foundation to notice.
    ///
    /// swift-corelibs-foundation's `waitUntilExit()` spins for ever when it misses a child's exit
    /// (a child that exits before Foundation watches it is never reaped): seen as a `<defunct>`
    /// child and a wait burning a core for an hour under the full suite, which spawns hundreds
    /// of short-lived children. This reaps the child itself with `waitpid` when Foundation has
    /// not; `terminationStatus` must not be read afterwards (use the result).
    public func waitForExitReliably() -> ChildExit {
        let pid = processIdentifier
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return Self.decode(status) }
            if result == -1, errno == EINTR { continue }
            if result == -1 {
                // Foundation reaped it (ECHILD): its status is published once it stops running.
                let deadline = ContinuousClock.now + .seconds(5)
                while isRunning, ContinuousClock.now < deadline { usleep(1_000) }
                guard !isRunning else { return ChildExit(status: -1, wasSignaled: false) }
                return ChildExit(status: terminationStatus, wasSignaled: terminationReason == .uncaughtSignal)
            }
            usleep(2_000)
        }
    }

    /// A `waitpid` status: exited with a code, or ended by a signal (POSIX's `WIFEXITED` and
    /// `WTERMSIG` layout, which Swift cannot import as macros).
    private static func decode(_ status: Int32) -> ChildExit {
        let signal = status & 0x7F
        if signal == 0 { return ChildExit(status: (status >> 8) & 0xFF, wasSignaled: false) }
        return ChildExit(status: signal, wasSignaled: true)
    }
}
