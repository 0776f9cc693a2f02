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
    /// Mount points inside the user's directories, left in place with everything under them
    /// (`"skipped: another file system"`): a wipe never leaves the file system, as
    /// `rm --one-file-system`. They stay in a `.wiping-` directory beside the user's, out of the
    /// user's reach.
    public var skipped: [ClearReport.Failure] = []

    /// Bytes given back in all areas (the database's files are not measured).
    public var bytesRemoved: ByteCount { removed.reduce(.zero) { $0 + $1.bytes } }
}
