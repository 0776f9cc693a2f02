import Foundation
import Logging
import StowageCore

/// What one process knows of a suite: the open log, the values replayed from it, and how far.
///
/// Lives inside ``Preferences``'s mutex; every method runs with it held.
struct PreferencesState {
    /// A value that changed: its key and the new value (`nil` when removed).
    typealias Change = (key: String, value: PreferenceValue?)

    private(set) var log: PreferencesLog
    private(set) var values: [String: PreferenceValue] = [:]
    /// The log offset up to which records are applied to ``values``.
    private(set) var applied = PreferencesLog.headerSize
    /// Records in the current file, live or not: compaction's measure of waste.
    private(set) var recordCount = 0
    let logger: Logger
    /// What the last repair at open found damaged; `nil` when the file was sound (or only a
    /// torn, uncommitted tail was dropped).
    private(set) var recovery: PreferencesRecovery?
    /// Held shared while the suite is open here; compaction needs this process to be alone.
    private let users: PreferencesUsersLock
    /// Dates the copy of a damaged file (``Preferences/Configuration/clock``).
    private let clock: CacheClock

    /// Opens the log at `path` and replays it, repairing a damaged or uncommitted tail.
    init(path: String, logger: Logger, clock: CacheClock = .system) throws {
        self.logger = logger
        self.clock = clock
        users = try PreferencesUsersLock(logPath: path)
        log = try Self.openCurrent(path: path, logger: logger)
        defer { log.unlock() }
        try replayAll(repairing: true)
    }

    /// Opens the file now at `path`, locked exclusively, skipping files a compaction replaced.
    private static func openCurrent(path: String, logger: Logger) throws -> PreferencesLog {
        while true {
            let log = try PreferencesLog.open(path: path)
            try log.lockExclusive()
            if log.isRetired {
                // Its store was removed and the deletion did not finish: the values are not to be
                // served again. Start the suite afresh.
                logger.notice(
                    "preferences: removing a file its store's removal left behind",
                    metadata: ["path": "\(path)"]
                )
                if !log.isReplacedAtPath { FileNames.remove(path) }
                log.unlock()
                continue
            }
            if log.isSuperseded {
                if log.isReplacedAtPath {
                    log.unlock()
                    continue
                }
                logger.notice(
                    "preferences: a compaction stopped before its rename; keeping the file",
                    metadata: ["path": "\(path)"]
                )
                log.clearStaleSupersededFlag()
            }
            // Temporaries a process killed mid-creation or mid-compaction left beside the file;
            // a running process's stays (its commit is still to come).
            TemporaryFile.removeLeftovers(beside: path)
            return log
        }
    }

    /// Reads every sound record of the (locked) current log into fresh values, and repairs
    /// the file: damaged records are skipped (the sound ones after them kept), the committed
    /// end is set from the records rather than trusted, and when committed data was damaged
    /// the file is copied aside first and rewritten from what survived (``recovery``).
    ///
    /// Only a tail past the committed end that does not parse — an append a crash cut short —
    /// is dropped without a report. Runs with the exclusive lock held.
    private mutating func replayAll(repairing: Bool) throws {
        values = [:]
        recordCount = 0
        applied = PreferencesLog.headerSize
        let size = try log.fileSize()
        let committed = log.committedEnd
        // The records decide, not the header: read the whole file.
        let scan = try log.scanRecords(from: applied, to: size)
        for record in scan.records { _ = apply(record) }
        applied = scan.end
        recordCount = scan.records.count
        guard repairing else { return }
        // A tail that does not parse past the committed end is an append that never committed
        // (a crash): expected, dropped silently. A header that disagrees with the records loses
        // nothing either: sound records past it are kept (their append completed), and one
        // pointing past the file (a power loss after the header reached the disk) is corrected.
        let committedIsPlausible = committed >= PreferencesLog.headerSize && committed <= size
        let tailLostCommittedData = scan.tail.map { committedIsPlausible && $0.offset < committed } ?? false
        let damage = scan.regions + (tailLostCommittedData ? [scan.tail!] : [])
        guard !damage.isEmpty else {
            if scan.end != committed || size != scan.end { try log.truncate(to: scan.end) }
            return
        }
        let headerWasWrong = !committedIsPlausible || (committed != scan.end && committed != scan.tail?.offset)
        var report = PreferencesRecovery(regions: damage, damagedCopy: nil, headerWasWrong: headerWasWrong)
        // A rewrite while another process has the suite open can lose that process's sets (see
        // compactIfAlone); then the damage is only skipped, and reported at every open, until a
        // process opens the suite alone and repairs it.
        let mayRewrite = scan.regions.isEmpty || users.isAlone()
        if mayRewrite { report.damagedCopy = try log.keepDamagedCopy(now: clock.now()) }
        logger.warning(
            "preferences: the suite's file was damaged; kept what was sound",
            metadata: ["path": "\(log.path)", "recovery": "\(report)"]
        )
        recovery = report
        if scan.regions.isEmpty {
            try log.truncate(to: scan.end)
        } else if mayRewrite {
            // Damage in the middle: rewrite the file from the sound records (its copy is kept).
            let replacement = try log.compacted(values: values)
            log.unlock()
            log = replacement
            try log.lockExclusive()
            applied = log.committedEnd
            recordCount = values.count
        }
    }

    /// Applies `record` to ``values`` and returns the changes it made.
    private mutating func apply(_ record: PreferencesLogRecord) -> [Change] {
        switch record {
        case .set(let key, let value):
            let previous = values.updateValue(value, forKey: key)
            return previous == value ? [] : [(key, value)]
        case .remove(let key):
            return values.removeValue(forKey: key) == nil ? [] : [(key, nil)]
        case .removeAll:
            defer { values.removeAll(keepingCapacity: true) }
            return values.keys.map { ($0, nil) }
        }
    }

    // MARK: - Reading

    /// Whether another process committed records, or replaced or removed the file, since the
    /// last catch-up.
    var isBehind: Bool { log.committedEnd != applied || log.isSuperseded || log.isRetired }

    /// Whether the file was removed with its store (``PreferencesLog/isRetired``): nothing is
    /// served from it any more.
    var isRemoved: Bool { log.isRetired }

    /// Applies what other processes wrote since the last catch-up; returns the changes.
    mutating func catchUp() throws -> [Change] {
        if log.isRetired { return forgetAll() }
        if log.isSuperseded && log.isReplacedAtPath { return try reopen() }
        let committed = log.committedEnd
        guard committed > applied else { return [] }
        let (records, end, stopped) = try log.readRecords(from: applied, to: committed)
        if let stopped {
            // Below the committed end every record was complete when committed: this is damage.
            logger.error(
                "preferences: a committed record is damaged",
                metadata: ["path": "\(log.path)", "at": "\(stopped)"]
            )
        }
        var changes: [Change] = []
        for record in records { changes += apply(record) }
        applied = end
        recordCount += records.count
        return changes
    }

    /// Drops every value (the file was removed with its store) and returns the removals.
    private mutating func forgetAll() -> [Change] {
        defer { values.removeAll() }
        return values.keys.map { ($0, nil) }
    }

    /// Switches to the file a compaction put at the path and returns how values differ.
    private mutating func reopen() throws -> [Change] {
        let old = values
        let replacement = try Self.openCurrent(path: log.path, logger: logger)
        log = replacement
        defer { log.unlock() }
        try replayAll(repairing: true)
        var changes: [Change] = []
        for (key, value) in values where old[key] != value { changes.append((key, value)) }
        for key in old.keys where values[key] == nil { changes.append((key, nil)) }
        return changes
    }

    func value(forKey key: String) -> PreferenceValue? { values[key] }

    var allValues: [String: PreferenceValue] { values }

    // MARK: - Writing

    /// Appends `record` under the exclusive lock after catching up; returns every change, the
    /// other processes' first.
    mutating func write(
        _ record: PreferencesLogRecord,
        encoded: [UInt8],
        configuration: Preferences.Configuration
    ) throws -> [Change] {
        let (ownChanges, changes) = try withExclusiveLock { state in
            state.applied = try state.log.append(encoded, synchronously: configuration.durability == .powerLoss)
            state.recordCount += 1
            let changes = state.apply(record)
            try state.compactIfWasteful(configuration: configuration)
            return changes
        }
        return changes + ownChanges
    }

    /// Rewrites the log when most of it is overwritten values. Call with the exclusive lock.
    private mutating func compactIfWasteful(configuration: Preferences.Configuration) throws {
        let logBytes = applied - PreferencesLog.headerSize
        guard logBytes >= configuration.compactionThreshold, recordCount > 2 * max(values.count, 1) else { return }
        _ = try compactIfAlone()
    }

    /// Compacts when no other process has the suite open; returns whether it did. Call with the
    /// exclusive lock held.
    mutating func compactIfAlone() throws -> Bool {
        guard users.isAlone() else { return false }
        try compact()
        return true
    }

    /// Rewrites the log as one record per value. Call with the exclusive lock held, and only
    /// when alone (``compactIfAlone()``); on return
    /// the new file is current (and unlocked, as nobody else can have locked it yet).
    private mutating func compact() throws {
        let before = applied
        let replacement = try log.compacted(values: values)
        log.unlock()
        log = replacement
        applied = replacement.committedEnd
        recordCount = values.count
        logger.debug(
            "preferences: compacted",
            metadata: ["path": "\(log.path)", "before": "\(before)", "after": "\(applied)"]
        )
    }

    /// Takes the exclusive lock on the current file, catches up, and runs `body`; returns its
    /// result and the changes other processes had made.
    mutating func withExclusiveLock<T>(_ body: (inout PreferencesState) throws -> T) throws -> (T, [Change]) {
        var changes: [Change] = []
        while true {
            if log.isRetired {
                throw StowageError(
                    code: .notFound,
                    message: """
                        the preferences file \(log.path) was removed with its store (a user wipe or a cleaner) \
                        while open; open the preferences again to store values
                        """,
                    path: log.path
                )
            }
            try log.lockExclusive()
            if !log.isSuperseded || !log.isReplacedAtPath { break }
            log.unlock()
            changes += try reopen()
        }
        log.clearStaleSupersededFlag()
        // After a compaction inside `body` this unlocks the new file, which nobody else has locked.
        defer { log.unlock() }
        changes += try catchUp()
        return (try body(&self), changes)
    }
}
