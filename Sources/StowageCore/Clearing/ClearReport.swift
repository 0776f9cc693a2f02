/// What clearing a directory removed and what it could not.
public struct ClearReport: Sendable, Hashable, Codable {
    /// The directory that was cleared.
    public var path: String
    /// Files, links and directories removed.
    public var removedCount: Int = 0
    /// Allocated bytes (`st_blocks × 512`) of removed files whose last link was removed: the
    /// space the file system got back.
    public var bytesFreed: ByteCount = .zero
    /// Entries that could not be removed, with the reason; empty when everything went. A mount
    /// point inside the directory is left whole and listed here as
    /// `"skipped: another file system"` (``Failure/isOtherFileSystem``), as
    /// `rm --one-file-system` skips it and exits non-zero.
    public var failures: [Failure] = []

    /// An entry that could not be removed.
    public struct Failure: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The entry's path.
        public var path: String
        /// Why, e.g. `"cannot remove: EACCES (Permission denied)"`.
        public var message: String
        /// The text logs and messages show.
        public var description: String { "\(path): \(message)" }
        /// Whether the entry is a mount point of another file system or mount, left in place with
        /// everything under it on purpose (message `"skipped: another file system"`).
        public var isOtherFileSystem: Bool { message == FileSystemBoundary.skipMessage }

        /// Creates a failure record.
        public init(path: String, message: String) {
            self.path = path
            self.message = message
        }
    }

    /// A report on `path`; by default nothing removed and nothing failed yet.
    public init(path: String, removedCount: Int = 0, bytesFreed: ByteCount = .zero, failures: [Failure] = []) {
        self.path = path
        self.removedCount = removedCount
        self.bytesFreed = bytesFreed
        self.failures = failures
    }

    /// Whether every entry was removed.
    public var isComplete: Bool { failures.isEmpty }
}
