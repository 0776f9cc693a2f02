import ArgumentParser
import Foundation

/// `stowage`: reports, measures and clears an app's storage.
@main
struct StowageTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stowage",
        abstract:
            "Local storage and caching for Swift programs: report, measure, clear, clean and purge an app's storage.",
        discussion: """
            Every command works on a container: the five locations (documents, application support, \
            caches, preferences, temporary) of one app. By default that is the container of the \
            'stowage' tool itself at the platform's standard places (XDG on Linux); --app ID picks \
            another app's, --root DIR a rooted container (DIR/Documents, DIR/Library/Caches, ...).

            Exit status: 0 success; 1 done, but some entries could not be read or removed (like du \
            and rm); 2 the operation failed (missing path, no permission, unsupported); 64 bad usage.

            Examples:
              stowage report --app com.example.reader
              stowage usage --children ~/.cache
              stowage clean --manifest PurgeableCache.plist --root /srv/app --dry-run
              stowage proxy --upstream http://127.0.0.1:8000 --listen 127.0.0.1:8080

            Run 'stowage help COMMAND' for one command; the manual page (man stowage) describes them \
            all, and the README says how to install it and the shell completions.
            """,
        version: "0.1.0",
        subcommands: [
            ReportCommand.self, UsageCommand.self, LocationsCommand.self, CapacityCommand.self, ClearCommand.self,
            CleanCommand.self, ClearCachesCommand.self, PurgeableCommand.self, PurgeCommand.self,
            PrefsCommand.self, DatabaseCommand.self, SecretsCommand.self, ProxyCommand.self,
        ],
        defaultSubcommand: ReportCommand.self
    )

    /// Parses and runs, after replacing `proxy --config FILE` by the file's options.
    ///
    /// On the main thread, before anything runs on Swift's cooperative pool: `stowage proxy`'s
    /// malloc arena limit (``MallocArenas``) is set here because glibc fixes the limit when a
    /// second thread first needs an arena, and a limit set later, in `run()` (on a pool thread,
    /// which had allocated by then), still left that thread's arena beside the main one.
    @MainActor
    static func main() async {
        if CommandLine.arguments.dropFirst().first == ProxyCommand.configuration.commandName {
            MallocArenas.apply(environment: ProcessInfo.processInfo.environment)
        }
        let arguments: [String]
        do {
            arguments = try ProxyConfigFile.expanding(Array(CommandLine.arguments.dropFirst()))
        } catch {
            exit(withError: error)
        }
        await main(arguments)
    }
}
