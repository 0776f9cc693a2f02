/// How a child process ended.
public struct ChildExit: Sendable, Equatable {
    /// The exit status, or the signal's number when ``wasSignaled``.
    public var status: Int32
    /// Whether a signal ended the child (SIGKILL in the crash tests).
    public var wasSignaled: Bool

    /// An exit with `status`, or by the signal `status` when `wasSignaled`.
    public init(status: Int32, wasSignaled: Bool) {
        self.status = status
        self.wasSignaled = wasSignaled
    }
}
