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
    /// (the child stays a `<defunct>` zombie nobody reaps): seen as a wait burning a core for an
    /// hour under the full suite, which spawns hundreds of short-lived children. This waits for
    /// Foundation as usual, and reaps the child itself with `waitpid` only once it has been a
    /// zombie for two seconds; in that case only the result is valid (`terminationStatus` is not).
    public func waitForExitReliably() -> ChildExit {
        #if os(Linux)
        let pid = processIdentifier
        var zombieSince: ContinuousClock.Instant?
        while isRunning {
            if Self.isZombie(pid) {
                let since = zombieSince ?? ContinuousClock.now
                zombieSince = since
                var status: Int32 = 0
                if ContinuousClock.now - since > .seconds(2), waitpid(pid, &status, WNOHANG) == pid {
                    return Self.decode(status)
                }
            }
            usleep(1_000)
        }
        #else
        waitUntilExit()
        #endif
        return ChildExit(status: terminationStatus, wasSignaled: terminationReason == .uncaughtSignal)
    }

    #if os(Linux)
    /// Whether `pid` has exited and waits to be reaped (state `Z` in `/proc/PID/stat`).
    private static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].trimmingPrefix(" ").first == "Z"
    }
    #endif

    /// A `waitpid` status: exited with a code, or ended by a signal (POSIX's `WIFEXITED` and
    /// `WTERMSIG` layout, which Swift cannot import as macros).
    private static func decode(_ status: Int32) -> ChildExit {
        let signal = status & 0x7F
        if signal == 0 { return ChildExit(status: (status >> 8) & 0xFF, wasSignaled: false) }
        return ChildExit(status: signal, wasSignaled: true)
    }
}
