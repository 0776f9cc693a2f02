import ArgumentParser
import Foundation
import StowageCore

/// `stowage clear PATH` / `stowage clear --location caches`: empty a directory, keep it.
struct ClearCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Remove the contents of a directory or a container location, keeping the directory.",
        discussion: """
            Symbolic links are removed, never followed. Entries that are already gone count as \
            removed; entries that cannot be removed are listed on standard error and the exit status \
            is 1. Refuses '/', the home directory and its ancestors.

            A mount inside the directory (another file system, or a bind mount of the same one) is \
            left whole with everything under it, as rm --one-file-system does, and listed as \
            "skipped: another file system" (in "failures" with --json); the exit status is then 1.

            Examples:
              stowage clear --location caches --app com.example.reader
              stowage clear /srv/app/tmp
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The directory to empty.")
    var path: String?

    @Option(help: "Empty this location of the container instead (caches keep their CACHEDIR.TAG).")
    var location: Location?

    func validate() throws {
        guard (path == nil) != (location == nil) else {
            throw ValidationError(
                "give either a PATH or --location (one of: \(Location.allCases.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        if let path {
            try GlobalOptions.checkPath(path, "clear")
            try Self.refuseDangerous(path)
        }
    }

    func run() async throws {
        try await Output.run {
            let report: ClearReport
            if let location {
                report = try await options.container().clear(location)
            } else {
                report = try await DirectoryClearing.clearContents(
                    of: URL(filePath: path!, directoryHint: .isDirectory)
                )
            }
            if options.json {
                try Output.printJSON(report)
            } else {
                print(
                    "Cleared \(report.path): removed \(report.removedCount) entries, freed \(report.bytesFreed.formatted(.compact))"
                )
            }
            for failure in report.failures { Output.warn(failure.description) }
            if !report.isComplete { throw Output.partialFailure }
        }
    }

    /// Clearing `/` or a home directory is never what someone meant.
    private static func refuseDangerous(_ path: String) throws {
        let target = URL(filePath: path, directoryHint: .isDirectory).standardizedFileURL.fileSystemPath
        let home = FileManager.default.homeDirectoryForCurrentUser.standardizedFileURL.fileSystemPath
        if target == "/" || target == home || home.hasPrefix(target + "/") {
            throw ValidationError(
                "refusing to clear '\(target)': it is the root or holds your home directory; name the directory to empty"
            )
        }
    }
}

extension Location: ExpressibleByArgument {}
