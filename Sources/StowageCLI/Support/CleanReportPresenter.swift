import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping

/// Follows a clean's progress and presents its outcome, for `clean` and `clear-caches` alike:
/// progress on standard error, the table and "freed 12.35M" (or JSON) on standard output,
/// failures as warnings, exit status 1 when a task failed.
enum CleanReportPresenter {
    static func present(_ progress: CleanProgress, json: Bool) async throws {
        var printer = CleanProgressPrinter()
        var report: CleanReport?
        for try await event in progress {
            if !json { printer.show(event) }
            if case .done(let done) = event { report = done }
        }
        guard let report else { throw CancellationError() }
        if json {
            try Output.printJSON(report)
        } else {
            print(render(report))
        }
        for task in report.tasks {
            if let error = task.error { Output.warn(error.message) }
            for failure in task.failures { Output.warn(failure.description) }
        }
        if !report.isComplete { throw Output.partialFailure }
    }

    static func render(_ report: CleanReport) -> String {
        var table = TextTable(header: ["TASK", report.isDryRun ? "WOULD FREE" : "FREED", "ENTRIES", "STATUS"])
        for task in report.tasks {
            let status =
                task.error != nil
                ? "failed"
                : !task.failures.isEmpty
                    ? "\(task.failures.count) failures" : task.reachedTimeLimit ? "time limit" : "ok"
            table.append([
                "\(task.index) \(task.task)", task.bytesFreed.formatted(.compact),
                report.isDryRun ? String(task.entriesBefore) : String(task.entriesRemoved), status,
            ])
        }
        let summary =
            report.isDryRun
            ? "would free \(report.bytesFreed.formatted(.compact)) (dry run: nothing was deleted)"
            : "freed \(report.bytesFreed.formatted(.compact))"
        let limit =
            report.reachedTimeLimit
            ? "; stopped at the time limit with \(report.tasks.filter(\.reachedTimeLimit).count) tasks unfinished" : ""
        return table.rendered + "\n" + summary + limit
    }
}
