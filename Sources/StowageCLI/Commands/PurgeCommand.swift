import ArgumentParser
import Foundation
import Logging
import StowageCache
import StowageCore
import StowageHousekeeping

/// `stowage purge [--reset-all]`: sweep the purgeable directories now, or empty them all.
struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Sweep the registered purgeable directories now (age policy, then size cap), or empty them.",
        discussion: """
            A sweep deletes files older than each directory's policy (by modification time), then,
            where a directory is over its cap, its oldest files (by birth time where the file system
            records it) until it is at half the cap. --reset-all empties every registered directory
            whatever its policy (APPurgeablePath's ResetAllPurgeablePaths). Exit status 1 when some entries
            could not be removed.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Empty every registered directory, manual ones included.")
    var resetAll = false

    func run() async throws {
        try await Output.run {
            let purgeable = PurgeableDirectories(container: try options.container(), configuration: .quiet)
            let report = resetAll ? try await purgeable.resetAll() : try await purgeable.sweep()
            if options.json {
                try Output.printJSON(report)
            } else {
                var table = TextTable(header: ["PATH", "POLICY", "REMOVED", "FREED", "LEFT"])
                for directory in report.directories {
                    table.append([
                        directory.path, directory.policy.description, String(directory.removedCount),
                        directory.bytesFreed.formatted(.compact), directory.remainingBytes.formatted(.compact),
                    ])
                }
                if !report.directories.isEmpty { print(table.rendered) }
                print("freed \(report.bytesFreed.formatted(.compact))")
            }
            for directory in report.directories {
                if let error = directory.error { Output.warn(error) }
                for failure in directory.failures { Output.warn(failure.description) }
            }
            if !report.isComplete { throw Output.partialFailure }
        }
    }
}

extension PurgeableDirectories.Configuration {
    /// The tool prints what happened itself; the library's log would repeat it.
    static var quiet: Self {
        var logger = Logger(label: "org.stowage.purgeable")
        logger.logLevel = .error
        return Self(logger: logger)
    }
}
