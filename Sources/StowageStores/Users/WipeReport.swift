import StowageCore

/// What `UserSpaces/wipe(user:)` removed.
public struct WipeReport: Sendable, Hashable, Codable {
    /// One of the user's directories.
    public struct Area: Sendable, Hashable, Codable {
        /// `caches`, `data` or `temporary`.
        public var area: String
        /// Files, links and directories removed.
        public var entries: Int
        /// Allocated bytes given back.
        public var bytes: ByteCount
    }

    /// The user wiped.
    public var user: String
    /// Whether this finished a wipe that a crash had cut short.
    public var resumed: Bool
    /// The directories removed (areas the user had nothing in are absent).
    public var removed: [Area] = []
    /// Whether the user had a database, now removed.
    public var removedDatabase = false
    /// Mount points left in place with everything under them (`"skipped: another file
    /// system"`): a wipe never leaves the file system, as `rm --one-file-system`. One inside the
    /// user's directories stays in a `.wiping-` (or, for the database, `.removing-`) directory
    /// beside the user's, out of the user's reach; a user's directory that is itself a mount
    /// point cannot be moved and stays where it is, whole, and the user's next space sees it.
    /// Everything else is wiped.
    public var skipped: [ClearReport.Failure] = []

    /// Bytes given back in all areas (the database's files are not measured).
    public var bytesRemoved: ByteCount { removed.reduce(.zero) { $0 + $1.bytes } }
}
