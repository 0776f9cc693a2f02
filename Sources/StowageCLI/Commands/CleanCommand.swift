import ArgumentParser
import Foundation
import Logging
import StowageCache
import StowageCore
import StowageHousekeeping

/// `stowage clean --manifest FILE`: run a clean manifest (a PurgeableCache.plist).
struct CleanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clean",
        abstract: "Run the clean tasks of a manifest (PurgeableCache.plist or JSON) with progress.",
        discussion: """
            Task paths are container paths such as Library/Caches/images; entries may use * and ?. \
            Absolute paths, '..' and symbolic links leading out of the container are refused; links \
            are removed as links, never followed. A mount point inside a task's path is left whole, \
            as rm --one-file-system does, and listed as "skipped: another file system" among the \
            task's failures. Class + Selectors tasks need handlers registered in the app's code, so \
            they fail here.

            Progress goes to standard error (a bar on a terminal), the summary to standard output. \
            --time-limit bounds the deleting (not the measuring): at the limit the clean stops \
            between two files and reports the tasks it did not finish. Exit status 1 when a task \
            failed (not for reaching the time limit).

            Examples:
              stowage clean --manifest PurgeableCache.plist --app com.example.app --dry-run
              stowage clean --manifest clean.json --root /srv/app --time-limit 30s
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("The manifest: a property list (XML, binary) or a .json file.", valueName: "FILE"))
    var manifest: String

    @Flag(help: "Measure and report what would be freed; delete nothing.")
    var dryRun = false

    @Option(
        help: ArgumentHelp(
            "Stop deleting after this long, e.g. 30s or 5m; the report says what was left.",
            valueName: "DURATION"
        )
    )
    var timeLimit: String?

    func validate() throws {
        try GlobalOptions.checkPath(manifest, "--manifest")
        _ = try parsedTimeLimit()
    }

    private func parsedTimeLimit() throws -> Duration? {
        try timeLimit.map { try parseTimeLimit($0) }
    }

    func run() async throws {
        try await Output.run {
            let manifest = try CleanManifest(contentsOf: URL(filePath: manifest))
            // Failed tasks are printed by the presenter; the library's log would say the same again.
            var logger = Logger(label: "org.stowage.cleaner")
            logger.logLevel = .error
            let cleaner = CacheCleaner(container: try options.container(), logger: logger)
            try await CleanReportPresenter.present(
                cleaner.run(manifest, dryRun: dryRun, timeLimit: try parsedTimeLimit()),
                json: options.json
            )
        }
    }
}
