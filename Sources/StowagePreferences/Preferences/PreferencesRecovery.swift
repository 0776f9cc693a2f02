/// What opening a preferences suite found damaged and repaired.
///
/// The log is checksummed record by record, so damage costs the damaged records only: reading
/// skips to the next record whose length and CRC-32C are sound (and whose successor is sound
/// too), and keeps everything after it. A torn tail — the record a crash or power loss cut
/// short after the last commit — is expected and dropped silently; anything else is reported
/// here, in the log (`warning`), and by `stowage prefs` with a non-zero exit.
///
/// ```swift
/// let preferences = try Preferences.open(suite: "main", in: container)
/// if let recovery = preferences.recovery {
///     print(recovery)   // "2 damaged region(s), 61 bytes dropped; the damaged file is kept at …"
/// }
/// ```
public struct PreferencesRecovery: Sendable, Hashable, CustomStringConvertible {
    /// One stretch of the file that held no sound record.
    public struct DamagedRegion: Sendable, Hashable {
        /// Where it starts, in bytes from the start of the file.
        public var offset: Int
        /// Its length in bytes.
        public var length: Int
        /// What was wrong with the first record there (`"checksum mismatch"`, `"record length 0"`, …).
        public var reason: String
    }

    /// The damaged stretches, in file order. Values set only in these records are lost.
    public var regions: [DamagedRegion]
    /// Where the file was copied, as it was, before it was rewritten; `nil` when it was not
    /// rewritten because another process had the suite open (the damaged records are skipped
    /// at every open until a process opens the suite alone and repairs it).
    public var damagedCopy: String?
    /// Whether the header's committed length disagreed with the records (and was corrected).
    public var headerWasWrong: Bool

    /// Bytes that held no sound record.
    public var bytesDropped: Int { regions.reduce(0) { $0 + $1.length } }

    /// The text logs and messages show.
    public var description: String {
        var text = "\(regions.count) damaged region(s), \(bytesDropped) bytes dropped"
        if headerWasWrong { text += "; the header's committed length was wrong and was corrected" }
        if let damagedCopy { text += "; the damaged file is kept at \(damagedCopy)" }
        return text
    }
}
