import StowageCore

/// What a sweep or a reset did, per registered directory.
public struct PurgeReport: Sendable, Hashable, Codable {
    /// One registered directory's outcome.
    public struct Directory: Sendable, Hashable, Codable {
        /// The registered path, e.g. `Documents/SomePath`.
        public var path: String
        /// Where it is on disk.
        public var fileSystemPath: String
        /// The policy it was swept with.
        public var policy: PurgePolicy
        /// Its size cap, if any.
        public var sizeCap: ByteCount?
        /// Files removed because they were older than the policy.
        public var removedForAge = 0
        /// Files removed because the directory was over its cap (oldest first, down to half).
        public var removedForCap = 0
        /// Entries removed by a reset or clear (files, links and directories).
        public var removedByReset = 0
        /// Allocated bytes given back to the file system (files whose last link went).
        public var bytesFreed = ByteCount.zero
        /// Allocated bytes of the files left (each hard-linked file once).
        public var remainingBytes = ByteCount.zero
        /// Entries that could not be examined or removed; the rest were still processed.
        public var failures: [ClearReport.Failure] = []
        /// Why the directory could not be processed at all (a refused path, a file in the
        /// way), or `nil`.
        public var error: String?
        /// Whether the time limit stopped the work in this directory, or came before it began:
        /// the counts are what was done, and `remainingBytes` counts only what was examined.
        public var reachedTimeLimit = false

        /// Every entry removed for any reason.
        public var removedCount: Int { removedForAge + removedForCap + removedByReset }
    }

    /// One entry per registered directory, in registration order.
    public var directories: [Directory] = []
    /// Bytes freed in all directories.
    public var bytesFreed: ByteCount { directories.reduce(.zero) { $0 + $1.bytesFreed } }
    /// Entries removed in all directories.
    public var removedCount: Int { directories.reduce(0) { $0 + $1.removedCount } }
    /// Whether the time limit stopped the work before every directory was done.
    public var reachedTimeLimit: Bool { directories.contains { $0.reachedTimeLimit } }
    /// Whether every directory was processed without a failure.
    public var isComplete: Bool { directories.allSatisfy { $0.error == nil && $0.failures.isEmpty } }
}

extension PurgeReport.Directory {
    /// An empty report for `registration`, before it is processed.
    init(starting registration: PurgeableDirectory) {
        self.init(
            path: registration.path,
            fileSystemPath: "",
            policy: registration.policy,
            sizeCap: registration.sizeCap
        )
    }
}
