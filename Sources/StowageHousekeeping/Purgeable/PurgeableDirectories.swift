import Dispatch
import Foundation
import Logging
import Metrics
import StowageCore

/// Directories that purge themselves: `APPurgeablePath` and `ResetAllPurgeablePaths` as Swift.
///
/// Register a directory of the container with a ``PurgePolicy`` and an optional size cap; the
/// registration is kept in a small file in the container, so every later run (and the
/// `stowage purgeable` command) knows it. A sweep deletes each directory's files older than its
/// policy, then, where a directory is still over its cap, its oldest files until it is at half
/// of the cap.
///
/// ```swift
/// let purgeable = PurgeableDirectories(container: container)
/// let feeds = try await purgeable.register("Library/Caches/feeds", policy: .oneWeek, sizeCap: 200 * .megabyte)
/// purgeable.sweepInBackground()          // once at launch; never blocks the caller
/// let report = try await purgeable.sweep()   // or on demand
/// try await purgeable.resetAll()         // the user pressed "clear cache"
/// ```
///
/// Ages are measured by ``Configuration/ageTimestamp`` (modification time by default); the cap
/// removes files in the order of ``Configuration/capOrder`` (birth time where the file system
/// records it — `statx` on Linux — else modification time). Sizes are allocated bytes
/// (`st_blocks × 512`, as `du`), each hard-linked file once. Sweeps never follow a symbolic link
/// and never remove directories; resets empty a directory and keep it.
///
/// Sweeps and resets of one instance run one at a time on a serial queue off Swift's
/// cooperative threads.
public final class PurgeableDirectories: Sendable {
    /// The container the registered paths are relative to.
    public let container: Container
    /// Clock, timestamps and logger.
    public let configuration: Configuration

    private let registry: PurgeableRegistryFile
    private let queue = DispatchQueue(label: "stowage.purgeable", qos: .utility)

    /// Purgeable directories of `container`. Does no I/O.
    public init(container: Container, configuration: Configuration = Configuration()) {
        self.container = container
        self.configuration = configuration
        self.registry = PurgeableRegistryFile(container: container)
    }

    /// Where the registrations are stored.
    public var registryURL: URL { registry.url }

    // MARK: - Registration

    /// Registers `path` (or updates its registration), creating the directory if it is missing.
    ///
    /// - Parameters:
    ///   - path: A directory of the container, sandbox-style: `Documents/SomePath`,
    ///     `Library/Caches/feeds`, `tmp/uploads` (see the Purging and cleaning article for the five prefixes). Absolute
    ///     paths, `..` and symbolic links leading out of the location are refused.
    ///   - policy: When files are deleted by age. Default ``PurgePolicy/manual``, as
    ///     `APPurgeablePath(path)`.
    ///   - sizeCap: Over this many bytes a sweep trims the directory to half of it; `nil` or zero
    ///     for no cap (`APPurgeablePath`'s `size = 0`). `APPurgeablePath` counts in MB: `200 * .megabyte`.
    /// - Returns: The directory's URL.
    /// - Throws: `StowageError`: `.pathEscapesRoot` or `.invalidArgument` for a bad path or cap,
    ///   `.notADirectory` when a file is in the way, I/O errors from creating it or writing the
    ///   registry.
    @discardableResult
    public func register(_ path: String, policy: PurgePolicy = .manual, sizeCap: ByteCount? = nil) async throws -> URL {
        try await BlockingWork.run { try self.register(path, policy: policy, sizeCap: sizeCap) }
    }

    /// The synchronous overload of `register(_:policy:sizeCap:)`: the same work on the calling thread.
    @discardableResult
    public func register(
        _ path: String,
        policy: PurgePolicy = .manual,
        sizeCap: ByteCount? = nil
    ) throws
        -> URL
    {
        let subject = "purgeable directory \(PathInput.quoted(path))"
        if let sizeCap, sizeCap < .zero {
            throw StowageError.invalidArgument(
                "\(subject): a size cap of \(sizeCap.rawValue) bytes is negative; give a positive cap, or nil for none"
            )
        }
        let parsed = try ContainerPath(parsing: path, subject: subject)
        guard case .directory = try ConfinedResolver.resolve(parsed, in: container, subject: subject, creating: true)
        else {
            let location = parsed.url(in: container).fileSystemPath
            throw StowageError(
                code: .notADirectory,
                message: "\(subject): '\(location)' exists and is not a directory; move it away or choose another path",
                path: location
            )
        }
        let registration = PurgeableDirectory(
            path: parsed.description,
            policy: policy,
            sizeCap: sizeCap == .zero ? nil : sizeCap
        )
        try registry.update { directories in
            if let index = directories.firstIndex(where: { $0.path == registration.path }) {
                directories[index] = registration
            } else {
                directories.append(registration)
            }
        }
        configuration.logger.info(
            "registered purgeable directory",
            metadata: [
                "path": "\(registration.path)", "policy": "\(policy)",
                "cap": "\(registration.sizeCap.map { $0.formatted(.compact) } ?? "none")",
            ]
        )
        return parsed.url(in: container)
    }

    /// Forgets `path`'s registration; its files stay.
    ///
    /// - Returns: Whether it was registered.
    @discardableResult
    public func unregister(_ path: String) async throws -> Bool {
        try await BlockingWork.run { try self.unregister(path) }
    }

    /// The synchronous overload of `unregister(_:)`: the same work on the calling thread.
    @discardableResult
    public func unregister(_ path: String) throws -> Bool {
        let normalized = try ContainerPath(parsing: path, subject: "purgeable directory \(PathInput.quoted(path))")
            .description
        return try registry.update { directories in
            let count = directories.count
            directories.removeAll { $0.path == normalized }
            return directories.count != count
        }
    }

    /// Where the container path `path` is on disk, without touching the file system.
    ///
    /// - Throws: `StowageError` for a path `register(_:policy:sizeCap:)` would refuse.
    public func url(for path: String) throws -> URL {
        try ContainerPath(parsing: path, subject: "purgeable directory \(PathInput.quoted(path))").url(in: container)
    }

    /// The registered directories, in registration order.
    public func registrations() async throws -> [PurgeableDirectory] {
        try await BlockingWork.run { try self.registrations() }
    }

    /// The synchronous overload of `registrations()`: the same work on the calling thread.
    public func registrations() throws -> [PurgeableDirectory] {
        try registry.read()
    }

    // MARK: - Sweeping

    /// Applies every registered directory's policy and cap now.
    ///
    /// A directory that is missing is skipped; one that cannot be processed (a refused path, a
    /// file in the way) gets an ``PurgeReport/Directory/error`` and the others are still swept.
    ///
    /// - Parameter timeLimit: A time budget, counted from the call on
    ///   ``Configuration/timeLimitClock`` (Apple's storage guide's background cleanup "stops
    ///   when its time runs out"). The sweep stops between two files when it is spent and reports
    ///   what it did: ``PurgeReport/reachedTimeLimit``, and the directories it did not reach.
    ///   `nil` (the default): no limit.
    /// - Returns: Per directory: files removed for age and for the cap, bytes freed, failures.
    /// - Throws: `StowageError` when the registry cannot be read; `CancellationError` when the
    ///   task is cancelled (checked before every file; what was removed stays removed).
    public func sweep(timeLimit: Duration? = nil) async throws -> PurgeReport {
        let flag = try limitFlag(timeLimit)
        return try await onQueue(flag) { try self.sweep(cancellation: $0) }
    }

    /// The synchronous overload of `sweep(timeLimit:)`: the same work on the calling thread.
    public func sweep(timeLimit: Duration? = nil) throws -> PurgeReport {
        let flag = try limitFlag(timeLimit)
        return try queue.sync { try sweep(cancellation: flag) }
    }

    /// Starts a sweep in the background and returns at once: the call an app makes at launch.
    ///
    /// The outcome is logged; await the returned task's value to get the report, cancel it to stop
    /// the sweep between two files.
    @discardableResult
    public func sweepInBackground() -> Task<PurgeReport, any Error> {
        Task.detached(priority: .background) {
            do {
                return try await self.sweep()
            } catch {
                self.configuration.logger.error("background sweep failed: \(error)")
                throw error
            }
        }
    }

    // MARK: - Emptying

    /// Empties every registered directory, whatever its policy (`ResetAllPurgeablePaths`). The
    /// directories and their registrations stay.
    ///
    /// - Parameter timeLimit: As `sweep(timeLimit:)`'s.
    /// - Throws: As `sweep(timeLimit:)`.
    public func resetAll(timeLimit: Duration? = nil) async throws -> PurgeReport {
        let flag = try limitFlag(timeLimit)
        return try await onQueue(flag) { try self.resetAll(cancellation: $0) }
    }

    /// The synchronous overload of `resetAll(timeLimit:)`: the same work on the calling thread.
    public func resetAll(timeLimit: Duration? = nil) throws -> PurgeReport {
        let flag = try limitFlag(timeLimit)
        return try queue.sync { try resetAll(cancellation: flag) }
    }

    /// Empties one registered directory — how a ``PurgePolicy/manual`` directory is cleared.
    ///
    /// - Throws: `StowageError` `.notFound` when `path` is not registered; as `sweep()`.
    public func clear(_ path: String) async throws -> PurgeReport.Directory {
        try await onQueue { try self.clear(path, cancellation: $0) }
    }

    /// The synchronous overload of `clear(_:)`: the same work on the calling thread.
    public func clear(_ path: String) throws -> PurgeReport.Directory {
        try queue.sync { try clear(path, cancellation: nil) }
    }

    // MARK: - Work on the queue

    /// A flag that also enforces `timeLimit` (from now), or `nil` without one.
    ///
    /// - Throws: `StowageError` `.invalidArgument` for a limit that is not positive.
    private func limitFlag(_ timeLimit: Duration?) throws -> CancellationFlag? {
        guard let timeLimit else { return nil }
        try TimeLimitCheck.validate(timeLimit)
        return CancellationFlag(timeLimit: timeLimit, clock: configuration.timeLimitClock)
    }

    private func onQueue<T: Sendable>(
        _ flag: CancellationFlag? = nil,
        _ work: @escaping @Sendable (CancellationFlag) throws -> T
    ) async throws -> T {
        let cancellation = flag ?? CancellationFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.async { continuation.resume(with: Result { try work(cancellation) }) }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    private func engine(_ cancellation: CancellationFlag?) -> PurgeSweep {
        PurgeSweep(
            container: container,
            ageTimestamp: configuration.ageTimestamp,
            capOrder: configuration.capOrder,
            now: configuration.clock.now().timeIntervalSince1970,
            cancellation: cancellation
        )
    }

    private func sweep(cancellation: CancellationFlag?) throws -> PurgeReport {
        try forEachRegistration(action: "sweep", cancellation: cancellation) { engine, registration in
            try engine.sweep(registration)
        }
    }

    private func resetAll(cancellation: CancellationFlag?) throws -> PurgeReport {
        try forEachRegistration(action: "reset", cancellation: cancellation) { engine, registration in
            try engine.empty(registration)
        }
    }

    /// Runs `body` on every registered directory in registration order and records the report.
    private func forEachRegistration(
        action: String,
        cancellation: CancellationFlag?,
        _ body: (PurgeSweep, PurgeableDirectory) throws -> PurgeReport.Directory
    ) throws -> PurgeReport {
        let engine = engine(cancellation)
        var report = PurgeReport()
        for registration in try registry.read() {
            // Past the time limit, the directories left are reported as not reached.
            if report.reachedTimeLimit || cancellation?.isPastTimeLimit == true {
                var skipped = PurgeReport.Directory(starting: registration)
                skipped.reachedTimeLimit = true
                report.directories.append(skipped)
                continue
            }
            report.directories.append(try body(engine, registration))
        }
        record(report, action: action)
        return report
    }

    private func clear(_ path: String, cancellation: CancellationFlag?) throws -> PurgeReport.Directory {
        let normalized = try ContainerPath(parsing: path, subject: "purgeable directory \(PathInput.quoted(path))")
            .description
        guard let registration = try registry.read().first(where: { $0.path == normalized }) else {
            throw StowageError(
                code: .notFound,
                message: "'\(normalized)' is not a registered purgeable directory; register it first or clear it "
                    + "with DirectoryClearing",
                path: normalized
            )
        }
        let directory = try engine(cancellation).empty(registration)
        record(PurgeReport(directories: [directory]), action: "clear")
        return directory
    }

    private func record(_ report: PurgeReport, action: String) {
        let removedForAge = report.directories.reduce(0) { $0 + $1.removedForAge }
        let removedForCap = report.directories.reduce(0) { $0 + $1.removedForCap }
        let removedByReset = report.directories.reduce(0) { $0 + $1.removedByReset }
        for (reason, count) in [("age", removedForAge), ("cap", removedForCap), ("reset", removedByReset)]
        where count > 0 {
            Counter(label: "stowage_purge_entries_removed_total", dimensions: [("reason", reason)])
                .increment(by: Int64(count))
        }
        Counter(label: "stowage_purge_bytes_freed_total").increment(by: report.bytesFreed.rawValue)
        var metadata: Logger.Metadata = [
            "directories": "\(report.directories.count)", "removed": "\(report.removedCount)",
            "freed": "\(report.bytesFreed.formatted(.compact))",
        ]
        for directory in report.directories {
            if let error = directory.error { metadata["error.\(directory.path)"] = "\(error)" }
        }
        let failures = report.directories.reduce(0) { $0 + $1.failures.count }
        if failures > 0 { metadata["failures"] = "\(failures)" }
        configuration.logger.log(
            level: report.isComplete ? .info : .warning,
            "purgeable \(action) done",
            metadata: metadata
        )
    }
}
