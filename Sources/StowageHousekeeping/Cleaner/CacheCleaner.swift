import Logging
import StowageCore
import Tracing

/// The manifest-driven cache cleaner: `APUserCacheCleaner`'s design, made safe and observable.
///
/// ```swift
/// let manifest = try CleanManifest(contentsOf: Bundle.main.url(forResource: "PurgeableCache", withExtension: "plist")!)
/// let cleaner = CacheCleaner(container: container, handlers: handlers)
/// for try await event in cleaner.run(manifest) {
///     switch event {
///     case .done(let report): print("freed", report.bytesFreed.formatted(.compact))   // "freed 12.35M"
///     default: show(event.phase, event.fraction)
///     }
/// }
/// ```
///
/// A run goes through `APUserCacheCleaner`'s four phases: pre-calculating (measuring what every task
/// names), cleaning, post-calculating (measuring again), done (bytes freed = before − after, per
/// task and in total, and the errors of the tasks that failed). One failing task never stops the
/// others.
///
/// Safety:
/// - Task paths are container paths (`Library/Caches/images`); absolute paths, `..` and symbolic
///   links that lead out of the location are refused with a `StowageError` naming the task
///   (`.pathEscapesRoot`), as are link loops (`.invalidArgument`).
/// - Deletion works through directory descriptors: `openat(…, O_NOFOLLOW | O_DIRECTORY)`,
///   `fstatat(…, AT_SYMLINK_NOFOLLOW)`, `unlinkat`; no path string is ever passed to a deleting
///   system call and no link is followed, so a link inside a cleaned directory is removed as a
///   link and a directory swapped for a link mid-way is not entered.
/// - A malformed manifest is rejected by ``CleanManifest`` before a run can start.
public final class CacheCleaner: Sendable {
    /// The container the manifest's paths are relative to.
    public let container: Container
    /// The handlers `Class` + `Selectors` tasks call.
    public let handlers: CleanHandlers
    /// Where runs are logged (label `org.stowage.cleaner`, silent by default).
    public let logger: Logger

    /// What a run's `timeLimit` is measured by.
    public let timeLimitClock: any Clock<Duration>

    /// Where the span of each run goes (see ``HousekeepingTracing``); `nil` for the process's
    /// tracer, `InstrumentationSystem.tracer`.
    public let tracer: (any Tracer)?

    /// A cleaner for `container`.
    ///
    /// - Parameters:
    ///   - container: The container the manifest's paths are relative to.
    ///   - handlers: The handlers `Class` + `Selectors` tasks call.
    ///   - logger: Where runs are logged; silent by default.
    ///   - timeLimitClock: What `run(_:dryRun:timeLimit:)`'s limit is measured by; default
    ///     `ContinuousClock()`, tests pass a clock they move.
    ///   - tracer: Where the span of each run goes; `nil` (the default) for
    ///     `InstrumentationSystem.tracer`, a no-op tracer until the application bootstraps one.
    public init(
        container: Container,
        handlers: CleanHandlers = CleanHandlers(),
        logger: Logger = Logger(label: "org.stowage.cleaner", factory: SwiftLogNoOpLogHandler.init),
        timeLimitClock: any Clock<Duration> = ContinuousClock(),
        tracer: (any Tracer)? = nil
    ) {
        self.container = container
        self.handlers = handlers
        self.logger = logger
        self.timeLimitClock = timeLimitClock
        self.tracer = tracer
    }

    /// Starts cleaning and returns its progress; see ``CleanProgress``.
    ///
    /// - Parameters:
    ///   - manifest: The tasks.
    ///   - dryRun: Measure and report what would be freed, delete nothing.
    ///   - timeLimit: A time budget for the cleaning phase, counted from the call on
    ///     ``timeLimitClock`` (Apple's storage guide: background cleanup stops when its time runs
    ///     out): deletion stops between two files when it is spent, the tasks not reached are
    ///     reported (``CleanReport/TaskResult/reachedTimeLimit``) and the bytes are measured
    ///     after as usual. `nil`: no limit. A limit that is not positive fails the run with a
    ///     `StowageError` `.invalidArgument`.
    /// - Returns: The events, ending with ``CleanEvent/done(_:)``. Cancelling the iterating task
    ///   stops the clean between two files.
    public func run(_ manifest: CleanManifest, dryRun: Bool = false, timeLimit: Duration? = nil) -> CleanProgress {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: CleanEvent.self, throwing: (any Error).self)
        let cancellation = CancellationFlag()
        let job = CleanJob(
            container: container,
            handlers: handlers,
            logger: logger,
            isDryRun: dryRun,
            cancellation: cancellation,
            // An invalid limit sets no deadline (adding it to the clock could overflow); the run
            // then fails at its first step below.
            deadline: timeLimit.flatMap { (try? TimeLimitCheck.validate($0)) == nil ? nil : $0 }
                .map { Deadline(after: $0, on: timeLimitClock) },
            gate: ProgressGate { continuation.yield($0) }
        )
        let tracer = tracer ?? InstrumentationSystem.tracer
        let task = Task {
            do {
                if let timeLimit { try TimeLimitCheck.validate(timeLimit) }
                let report = try await tracer.withAnySpan(HousekeepingTracing.SpanName.cleanerRun) { span in
                    let report = try await withTaskCancellationHandler {
                        try await job.run(manifest)
                    } onCancel: {
                        cancellation.cancel()
                    }
                    if span.isRecording {
                        span.attributes[HousekeepingTracing.Attribute.bytesFreed] = Int(report.bytesFreed.rawValue)
                        span.attributes[HousekeepingTracing.Attribute.dryRun] = report.isDryRun
                        span.attributes[HousekeepingTracing.Attribute.taskCount] = report.tasks.count
                        span.attributes[HousekeepingTracing.Attribute.errorCount] = report.errors.count
                        span.attributes[HousekeepingTracing.Attribute.reachedTimeLimit] = report.reachedTimeLimit
                    }
                    return report
                }
                continuation.yield(.done(report))
                continuation.finish()
            } catch {
                if error is CancellationError { logger.notice("clean cancelled") }
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { termination in
            if case .cancelled = termination {
                cancellation.cancel()
                task.cancel()
            }
        }
        return CleanProgress(stream: stream)
    }

    /// Cleans and returns the report, without progress.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled (between two files; what
    ///   was removed stays removed). Task failures are in the report, not thrown.
    public func clean(
        _ manifest: CleanManifest,
        dryRun: Bool = false,
        timeLimit: Duration? = nil
    ) async throws
        -> CleanReport
    {
        try await run(manifest, dryRun: dryRun, timeLimit: timeLimit).report()
    }
}
