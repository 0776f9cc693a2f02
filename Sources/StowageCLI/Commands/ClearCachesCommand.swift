import ArgumentParser
import Foundation
import Logging
import StowageStores

/// `stowage clear-caches`: empty everything regenerable in a container, keep everything durable.
struct ClearCachesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear-caches",
        abstract: "Empty every cache of a container (temporary, disk caches, cache files, purgeable directories).",
        discussion: """
            Durable data is never touched: documents (other than purgeable directories), application \
            support, preferences, secrets and databases. Disk caches are emptied through their index, \
            so processes that have them open stay consistent. Progress goes to standard error, the \
            summary ("freed 12.35M") to standard output. Exit status 1 when a task failed.

            A mount inside the container (another file system, or a bind mount of the same one), \
            in a location or inside a disk cache's directory, is left whole, as rm \
            --one-file-system leaves it, and named as "PATH: skipped: another file system" (in its \
            task's "failures" with --json); the exit status is then 1.

            Examples:
              stowage clear-caches --app com.example.reader --dry-run
              stowage clear-caches --root /srv/app --json
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Measure and report what would be freed; delete nothing.")
    var dryRun = false

    func run() async throws {
        try await Output.run {
            // Failed tasks are printed by the presenter; the library's log would say the same again.
            var logger = Logger(label: "org.stowage.clear-caches")
            logger.logLevel = .error
            let clearing = ClearCaches(container: try options.container(), logger: logger)
            try await CleanReportPresenter.present(try clearing.run(dryRun: dryRun), json: options.json)
        }
    }
}
