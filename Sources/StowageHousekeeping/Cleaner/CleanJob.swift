import Logging
import Metrics
import StowageCore
import Synchronization

/// One run of the cleaner: prepare and measure, clean, measure again, report.
///
/// The file-system phases run on the blocking-I/O queue; handlers run as the async functions
/// they are. A task's failure is recorded in its result and the next task runs.
struct CleanJob: Sendable {
    let container: Container
    let handlers: CleanHandlers
    let logger: Logger
    let isDryRun: Bool
    let cancellation: CancellationFlag
    /// The cleaning phase's time limit; measuring before and after is not bounded, so that the
    /// report is exact.
    let deadline: Deadline?
    let gate: ProgressGate

    func run(_ manifest: CleanManifest) async throws -> CleanReport {
        var tasks = try await BlockingWork.run { try self.prepareAndMeasure(manifest) }
        if isDryRun {
            for index in tasks.indices {
                tasks[index].result.bytesAfter = tasks[index].result.bytesBefore
                tasks[index].result.bytesFreed = tasks[index].result.bytesBefore
            }
        } else {
            try await clean(&tasks)
            let cleaned = tasks
            tasks = try await BlockingWork.run { try self.measureAfter(cleaned) }
        }
        let report = CleanReport(tasks: tasks.map(\.result), isDryRun: isDryRun)
        record(report)
        return report
    }

    // MARK: - Phases

    private func prepareAndMeasure(_ manifest: CleanManifest) throws -> [PreparedTask] {
        gate.emit(.preCalculating(fraction: 0), force: true)
        let targets = CleanTargets(container: container, handlers: handlers)
        var tasks = manifest.tasks.enumerated().map { targets.prepare($1, index: $0 + 1) }
        let directoryEntries = tasks.map { $0.measuredDirectories.map { (try? $0.entries()) ?? [] } }
        let total = tasks.indices.reduce(0) { $0 + tasks[$1].units.count + directoryEntries[$1].joined().count }
        var measure = TreeMeasure(cancellation: cancellation)
        var done = 0
        for index in tasks.indices where tasks[index].isRunnable {
            var bytes: Int64 = 0
            var entries = 0
            func add(_ name: String, in directory: OpenDirectory) throws {
                let totals = try measure.measure(name, in: directory)
                bytes += totals.bytes
                entries += totals.entries
                done += 1
                gate.emit(.preCalculating(fraction: Double(done) / Double(max(total, 1))))
            }
            for unit in tasks[index].units { try add(unit.name, in: unit.directory) }
            for (directory, listing) in zip(tasks[index].measuredDirectories, directoryEntries[index]) {
                for entry in listing { try add(entry.name, in: directory) }
            }
            tasks[index].result.bytesBefore = ByteCount(bytes)
            tasks[index].result.entriesBefore = entries
        }
        gate.emit(.preCalculating(fraction: 1), force: true)
        return tasks
    }

    private func clean(_ tasks: inout [PreparedTask]) async throws {
        let pathEntries = tasks.filter(\.isRunnable).reduce(0) {
            $0 + ($1.handlers.isEmpty ? $1.result.entriesBefore : 0)
        }
        let total = max(1, pathEntries + tasks.filter(\.isRunnable).reduce(0) { $0 + $1.handlers.count })
        var done = 0
        let limited = CancellationFlag(parent: cancellation, deadline: deadline)
        var reachedTimeLimit = false
        for index in tasks.indices where tasks[index].isRunnable {
            try cancellation.check()
            try Task.checkCancellation()
            if reachedTimeLimit || limited.isPastTimeLimit {
                // Tasks the time limit came before: reported, not run.
                reachedTimeLimit = true
                tasks[index].result.reachedTimeLimit = true
                continue
            }
            let name = tasks[index].result.task
            gate.emit(.cleaning(fraction: Double(done) / Double(total), task: name), force: true)
            if tasks[index].handlers.isEmpty {
                let task = tasks[index]
                let base = done
                let (removed, failures, stopped) = try await BlockingWork.run {
                    var removal = TreeRemoval(cancellation: limited) { count in
                        gate.emit(.cleaning(fraction: Double(min(base + count, total)) / Double(total), task: name))
                    }
                    do {
                        for unit in task.units { try removal.remove(unit.name, type: unit.type, in: unit.directory) }
                    } catch is TimeLimitReached {
                        return (removal.removedCount, removal.failures, true)
                    }
                    return (removal.removedCount, removal.failures, false)
                }
                tasks[index].result.entriesRemoved = removed
                tasks[index].result.failures = failures
                tasks[index].result.reachedTimeLimit = stopped
                reachedTimeLimit = stopped
                done += tasks[index].result.entriesBefore
            } else {
                for handler in tasks[index].handlers {
                    if limited.isPastTimeLimit {
                        tasks[index].result.reachedTimeLimit = true
                        reachedTimeLimit = true
                        break
                    }
                    do {
                        for left in try await handler.body() where !tasks[index].result.failures.contains(left) {
                            tasks[index].result.failures.append(left)
                        }
                    } catch is CancellationError {
                        throw CancellationError()
                    } catch {
                        tasks[index].result.error =
                            error as? StowageError
                            ?? StowageError(
                                code: .ioError,
                                message: "task \(tasks[index].result.index) (\(name)): the handler failed: \(error)",
                                cause: error
                            )
                        break
                    }
                    done += 1
                    gate.emit(.cleaning(fraction: Double(done) / Double(total), task: name))
                }
            }
        }
        gate.emit(.cleaning(fraction: 1, task: tasks.last?.result.task ?? ""), force: true)
    }

    private func measureAfter(_ cleaned: [PreparedTask]) throws -> [PreparedTask] {
        var tasks = cleaned
        gate.emit(.postCalculating(fraction: 0), force: true)
        let directoryEntries = tasks.map { $0.measuredDirectories.map { (try? $0.entries()) ?? [] } }
        let total = tasks.indices.reduce(0) { $0 + tasks[$1].units.count + directoryEntries[$1].joined().count }
        var measure = TreeMeasure(cancellation: cancellation)
        var done = 0
        for index in tasks.indices where tasks[index].result.entriesBefore > 0 || !tasks[index].handlers.isEmpty {
            var bytes: Int64 = 0
            func add(_ name: String, in directory: OpenDirectory) throws {
                bytes += try measure.measure(name, in: directory).bytes
                done += 1
                gate.emit(.postCalculating(fraction: Double(done) / Double(max(total, 1))))
            }
            for unit in tasks[index].units { try add(unit.name, in: unit.directory) }
            for (directory, listing) in zip(tasks[index].measuredDirectories, directoryEntries[index]) {
                for entry in listing { try add(entry.name, in: directory) }
            }
            tasks[index].result.bytesAfter = ByteCount(bytes)
            tasks[index].result.bytesFreed = max(.zero, tasks[index].result.bytesBefore - ByteCount(bytes))
        }
        gate.emit(.postCalculating(fraction: 1), force: true)
        return tasks
    }

    private func record(_ report: CleanReport) {
        Counter(label: "stowage_cleaner_bytes_freed_total").increment(by: report.bytesFreed.rawValue)
        let failed = report.tasks.filter { !$0.isSuccess }
        if !failed.isEmpty {
            Counter(label: "stowage_cleaner_failed_tasks_total").increment(by: Int64(failed.count))
        }
        for task in failed {
            logger.warning(
                "clean task failed",
                metadata: [
                    "task": "\(task.index) \(task.task)",
                    "error": "\(task.error?.message ?? "")",
                    "failures": "\(task.failures.count)",
                ]
            )
        }
        logger.info(
            isDryRun ? "clean dry run done" : "clean done",
            metadata: [
                "tasks": "\(report.tasks.count)", "failed": "\(failed.count)",
                "freed": "\(report.bytesFreed.formatted(.compact))",
            ]
        )
    }
}

/// Passes progress events on, at most about one per percent per phase, never going back.
final class ProgressGate: Sendable {
    private let last = Mutex<(phase: CleanPhase, fraction: Double, task: String)>((.done, -1, ""))
    private let sink: @Sendable (CleanEvent) -> Void

    init(_ sink: @escaping @Sendable (CleanEvent) -> Void) {
        self.sink = sink
    }

    /// Emits `event` if it is a new phase or task, at least a percent further, or `force`d.
    func emit(_ event: CleanEvent, force: Bool = false) {
        let task: String
        if case .cleaning(_, let name) = event { task = name } else { task = "" }
        let passes = last.withLock { last in
            let isNew = last.phase != event.phase || last.task != task
            guard force || isNew || event.fraction >= last.fraction + 0.01 else { return false }
            guard isNew || event.fraction >= last.fraction else { return false }
            last = (event.phase, event.fraction, task)
            return true
        }
        if passes { sink(event) }
    }
}
