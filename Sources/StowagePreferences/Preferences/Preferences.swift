import Foundation
import StowageCore
import Synchronization

/// Typed, durable, observable preferences: the role of `UserDefaults`, at a few microseconds
/// per write.
///
/// ```swift
/// let preferences = try await Preferences.open(suite: "main", in: container)
/// let launchCount = Preferences.Key<Int>("launchCount", default: 0)
/// try preferences.set(preferences[launchCount] + 1, for: launchCount)
/// ```
///
/// Each suite is one file in the container's preferences location (`NAME.stowprefs`): a
/// checksummed append-only log of changes, replayed into memory when opened and compacted when
/// most of it is overwritten values. Reads come from memory. A `set` appends one record with a
/// single `pwrite` and returns: it survives the process being killed right after (see
/// ``Durability``). A torn or damaged tail (a power loss) is detected by its checksum and
/// dropped, never read as a value.
///
/// Several processes may use one suite: writers take a `flock`, and the committed length of
/// the log sits in a shared memory page, so a read notices another process's write with one
/// memory load and applies it before answering. Observers (``observe(_:onChange:)``,
/// ``changes(for:)``) hear about other processes' changes too.
///
/// Opening the same file twice in one process returns the same instance.
public final class Preferences: Sendable {
    /// The suite's file.
    public let url: URL
    /// The configuration the store was opened with.
    public let configuration: Configuration
    let state: Mutex<PreferencesState>
    let observers = PreferencesObservers()

    private init(url: URL, configuration: Configuration) throws {
        self.url = url
        self.configuration = configuration
        state = Mutex(try PreferencesState(path: url.path, logger: configuration.logger, clock: configuration.clock))
    }

    // MARK: - Opening

    /// Opens (creating if needed) the suite `suite` in `container`'s preferences location.
    ///
    /// - Parameters:
    ///   - suite: A file name without a path: letters, digits, `.`, `-` and `_`
    ///     (e.g. `"main"` or `"com.example.app"`).
    ///   - container: The container whose preferences location holds the suite's file.
    ///   - configuration: Durability and the other settings of the open suite.
    /// - Throws: `StowageError`: `.invalidArgument` for a bad suite name, `.corrupt` when the
    ///   file is not a preferences file, `.unsupported` when a newer format wrote it, or the
    ///   file system's error.
    public static func open(
        suite: String = "standard",
        in container: Container,
        configuration: Configuration = Configuration()
    ) async throws -> Preferences {
        try await BlockingWork.run { try open(suite: suite, in: container, configuration: configuration) }
    }

    /// The synchronous overload of `open(suite:in:configuration:)`: the same work on the calling thread.
    public static func open(
        suite: String = "standard",
        in container: Container,
        configuration: Configuration = Configuration()
    ) throws -> Preferences {
        try validate(suite: suite)
        let directory = try container.directory(for: .preferences)
        return try open(at: directory.appendingPathComponent(suite + ".stowprefs"), configuration: configuration)
    }

    /// Opens (creating if needed) the preferences file at `url` off Swift's cooperative
    /// threads; its directory must exist. The asynchronous overload of `open(at:configuration:)`.
    public static func open(at url: URL, configuration: Configuration = Configuration()) async throws -> Preferences {
        try await BlockingWork.run { try open(at: url, configuration: configuration) }
    }

    /// Opens (creating if needed) the preferences file at `url`; its directory must exist.
    public static func open(at url: URL, configuration: Configuration = Configuration()) throws -> Preferences {
        _ = try url.checkedFileSystemPath(subject: "the preferences file")
        let key = url.standardizedFileURL.path
        return try registry.withLock { registry in
            if let open = registry[key]?.preferences, !open.isRemoved { return open }
            let preferences = try Preferences(url: url, configuration: configuration)
            registry[key] = WeakPreferences(preferences: preferences)
            return preferences
        }
    }

    private static let registry = Mutex<[String: WeakPreferences]>([:])

    private struct WeakPreferences {
        weak var preferences: Preferences?
    }

    private static func validate(suite: String) throws {
        guard PlainName.isValid(suite, maximumLength: 200, allowsLeadingDot: false) else {
            throw StowageError(
                code: .invalidArgument,
                message: """
                    the preferences suite name \(suite.debugDescription) is not a plain file name; use 1 to 200 \
                    letters, digits, '.', '-' or '_', not starting with '.'
                    """
            )
        }
    }

    /// Whether the suite's file was removed while open (a `UserSpaces` wipe of its user, a
    /// cleaner deleting its directory), in this process or another. A removed suite reads as
    /// empty and refuses writes with `StowageError` `.notFound`; opening the path again starts a
    /// new, empty suite.
    public var isRemoved: Bool { state.withLock { $0.isRemoved } }

    /// What opening this suite found damaged and repaired; `nil` when the file was sound.
    ///
    /// Values set only in damaged records are lost; everything else was kept, and the file
    /// as it was is copied beside it (``PreferencesRecovery/damagedCopy``).
    public var recovery: PreferencesRecovery? { state.withLock { $0.recovery } }

    // MARK: - Reading

    /// The value stored for `key`, or its default when there is none (or one of another type).
    @inlinable
    public subscript<Value>(key: PreferenceKey<Value>) -> Value {
        value(forName: key.name).flatMap(key.decode) ?? key.defaultValue
    }

    /// The stored value named `name`, untyped; `nil` when there is none.
    public func value(forName name: String) -> PreferenceValue? {
        // The common case: nobody else wrote since the last read. One lock, one lookup.
        let current: PreferenceValue?? = state.withLock { state in
            state.isBehind ? .none : .some(state.value(forKey: name))
        }
        if let current { return current }
        let (value, changes) = state.withLock { state -> (PreferenceValue?, [PreferencesState.Change]) in
            let changes = state.isBehind ? (try? state.catchUp()) ?? [] : []
            return (state.value(forKey: name), changes)
        }
        if !changes.isEmpty { observers.notify(changes) }
        return value
    }

    /// Whether a value is stored for `key` (its default does not count).
    public func contains<Value>(_ key: PreferenceKey<Value>) -> Bool {
        value(forName: key.name) != nil
    }

    /// Every stored value by name.
    public func dictionaryRepresentation() -> [String: PreferenceValue] {
        refresh()
        return state.withLock { $0.allValues }
    }

    /// Applies other processes' changes now (reads do this by themselves) and tells observers.
    public func refresh() {
        let changes = state.withLock { state in state.isBehind ? (try? state.catchUp()) ?? [] : [] }
        if !changes.isEmpty { observers.notify(changes) }
    }

    // MARK: - Writing

    /// Stores `value` for `key`; for an optional key, `nil` removes the stored value.
    ///
    /// Returns once the change is in the log (see ``Configuration/durability``).
    /// - Throws: `StowageError` when the value cannot be encoded or the log cannot be written
    ///   (`.noSpace` on a full volume); the stored value is then unchanged.
    public func set<Value>(_ value: Value, for key: PreferenceKey<Value>) throws {
        if key.isAbsent(value) {
            try removeValue(forName: key.name)
            return
        }
        let stored: PreferenceValue
        do {
            stored = try key.encode(value)
        } catch {
            throw StowageError(
                code: .invalidArgument,
                message: "the value for preference \(key.name.debugDescription) cannot be encoded: \(error)",
                cause: error
            )
        }
        try set(stored, forName: key.name)
    }

    /// Stores an untyped value named `name`.
    ///
    /// - Throws: `StowageError` `.invalidArgument` for NaN or an infinity (as a double or a
    ///   date) anywhere in `value`: JSON and property lists cannot carry them, so an export
    ///   would not round-trip; errors of the log as for ``set(_:for:)``.
    public func set(_ value: PreferenceValue, forName name: String) throws {
        try value.checkRepresentable(path: name)
        try write(.set(key: name, value: value))
    }

    /// Removes the value stored for `key`; reads give its default afterwards.
    public func remove<Value>(_ key: PreferenceKey<Value>) throws {
        try removeValue(forName: key.name)
    }

    /// Removes the value named `name`.
    public func removeValue(forName name: String) throws {
        try write(.remove(key: name))
    }

    /// Removes every value of the suite.
    public func removeAll() throws {
        try write(.removeAll)
    }

    private func write(_ record: PreferencesLogRecord) throws {
        let encoded = try Self.checkedEncoding(of: record)
        let changes = try state.withLock { try $0.write(record, encoded: encoded, configuration: configuration) }
        if !changes.isEmpty { observers.notify(changes) }
    }

    /// The record's bytes; refuses one over the log's payload limit.
    static func checkedEncoding(of record: PreferencesLogRecord) throws -> [UInt8] {
        let encoded = record.encoded()
        guard encoded.count - PreferencesLogRecord.prefixSize <= PreferencesLogRecord.maximumPayloadSize else {
            throw StowageError(
                code: .invalidArgument,
                message: """
                    a preference of \(encoded.count) bytes is over the \(PreferencesLogRecord.maximumPayloadSize >> 20) \
                    MiB limit; keep large data in files or a database
                    """
            )
        }
        return encoded
    }

    // MARK: - Maintenance

    /// Waits until every write so far is on the device (`fdatasync`; `F_FULLFSYNC` on Apple): a power loss after this
    /// returns loses none of them.
    public func synchronize() throws {
        try state.withLock { try $0.log.flush() }
    }

    /// Rewrites the log as one record per value now, if no other process has the suite open
    /// (writes do it by themselves when most of the log is overwritten values); returns whether
    /// it did.
    @discardableResult
    public func compact() throws -> Bool {
        let (compacted, changes) = try state.withLock { try $0.withExclusiveLock { try $0.compactIfAlone() } }
        if !changes.isEmpty { observers.notify(changes) }
        return compacted
    }
}
