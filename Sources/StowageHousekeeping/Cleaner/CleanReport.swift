import StowageCore

/// What a clean freed, per task and in total, and what failed.
public struct CleanReport: Sendable, Encodable {
    /// One task's outcome.
    public struct TaskResult: Sendable, Encodable {
        /// The task's position in the manifest, from 1.
        public var index: Int
        /// The task, e.g. `"Path 'Library/Caches/images'"`.
        public var task: String
        /// Allocated bytes of what the task names, measured before cleaning.
        public var bytesBefore = ByteCount.zero
        /// The same, measured after cleaning (equal to ``bytesBefore`` in a dry run).
        public var bytesAfter = ByteCount.zero
        /// `bytesBefore − bytesAfter`; in a dry run, what would be freed (``bytesBefore``).
        public var bytesFreed = ByteCount.zero
        /// Files, links and directories counted before cleaning.
        public var entriesBefore = 0
        /// Entries removed (0 in a dry run).
        public var entriesRemoved = 0
        /// The paths the task named that existed (its matched entries), for dry runs and logs.
        public var targets: [String] = []
        /// Entries that could not be removed; the rest of the task went on.
        public var failures: [ClearReport.Failure] = []
        /// Why the task did not run (a refused path, an unregistered handler, a handler's
        /// error), or `nil`.
        public var error: StowageError?
        /// Whether the run's time limit stopped this task, or came before it began: what it
        /// removed is in ``entriesRemoved`` and the bytes measured after.
        public var reachedTimeLimit = false

        /// Whether the task ran and removed everything it named.
        public var isSuccess: Bool { error == nil && failures.isEmpty }

        private enum CodingKeys: String, CodingKey {
            case index, task, bytesBefore, bytesAfter, bytesFreed, entriesBefore, entriesRemoved, targets, failures
            case error, reachedTimeLimit
        }

        /// Encodes the value for JSON reports.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(index, forKey: .index)
            try container.encode(task, forKey: .task)
            try container.encode(bytesBefore, forKey: .bytesBefore)
            try container.encode(bytesAfter, forKey: .bytesAfter)
            try container.encode(bytesFreed, forKey: .bytesFreed)
            try container.encode(entriesBefore, forKey: .entriesBefore)
            try container.encode(entriesRemoved, forKey: .entriesRemoved)
            try container.encode(targets, forKey: .targets)
            try container.encode(failures, forKey: .failures)
            try container.encode(error.map { ["code": "\($0.code)", "message": $0.message] }, forKey: .error)
            try container.encode(reachedTimeLimit, forKey: .reachedTimeLimit)
        }
    }

    /// One result per manifest task, in manifest order.
    public var tasks: [TaskResult]
    /// Whether nothing was deleted because this was a dry run.
    public var isDryRun: Bool

    /// Bytes freed by all tasks (in a dry run: what would be freed). Overlapping tasks are
    /// counted once: every file is measured for the first task that names it.
    public var bytesFreed: ByteCount { tasks.reduce(.zero) { $0 + $1.bytesFreed } }
    /// Whether the time limit stopped the run before every task was done.
    public var reachedTimeLimit: Bool { tasks.contains(where: \.reachedTimeLimit) }
    /// The errors of the tasks that failed.
    public var errors: [StowageError] { tasks.compactMap(\.error) }
    /// Whether every task succeeded.
    public var isComplete: Bool { tasks.allSatisfy(\.isSuccess) }

    private enum CodingKeys: String, CodingKey {
        case tasks, isDryRun, bytesFreed, isComplete, reachedTimeLimit
    }

    /// Encodes the value for JSON reports.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tasks, forKey: .tasks)
        try container.encode(isDryRun, forKey: .isDryRun)
        try container.encode(bytesFreed, forKey: .bytesFreed)
        try container.encode(isComplete, forKey: .isComplete)
        // A summary as bytesFreed and isComplete are: `stowage clean --json` readers need not
        // look through every task to learn that the run stopped short.
        try container.encode(reachedTimeLimit, forKey: .reachedTimeLimit)
    }
}
