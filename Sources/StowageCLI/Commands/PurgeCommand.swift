import ArgumentParser
import Foundation
import Logging
import StowageCache
import StowageCore
import StowageHousekeeping

/// `stowage purge [--reset-all | --marked [--free SIZE|all] [--dry-run]]`: sweep the purgeable
/// directories now, empty them, or remove the items marked purgeable.
struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Sweep the registered purgeable directories now (age policy, then size cap), or empty them.",
        discussion: """
            A sweep deletes files older than each directory's policy (by modification time), then, \
            where a directory is over its cap, its oldest files (by birth time where the file system \
            records it) until it is at half the cap. --reset-all empties every registered directory \
            whatever its policy (APPurgeablePath's ResetAllPurgeablePaths).

            --marked removes the files and directories marked purgeable (Marks.setPurgeable, the \
            user.stowage.purgeable attribute) anywhere in the container, oldest first, never through \
            a link and never a location itself: as much as the volume needs to leave storage \
            pressure (opportunistic space under 10% or 200 MB), or at least --free SIZE, or every one \
            with --free all. --dry-run lists what would go.

            --time-limit stops any of these between two files when the time is spent; the report \
            says what was done and which directories were not reached. Exit status 1 when some \
            entries could not be removed (not for reaching the time limit).

            No purge leaves the file system of the location it works in: a mount point inside it (a \
            bind mount, a tmpfs, an overlay) is neither swept, emptied nor taken for a marked item, \
            and is listed as "skipped: another file system" (in "failures" with --json), as \
            rm --one-file-system does.

            Examples:
              stowage purge --app com.example.reader --time-limit 30s
              stowage purge --marked --free 500MB --dry-run
              stowage purge --reset-all --root /srv/app
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Empty every registered directory, manual ones included.")
    var resetAll = false

    @Flag(help: "Remove the items marked purgeable instead, oldest first.")
    var marked = false

    @Option(
        help: ArgumentHelp(
            "With --marked: free at least this much (e.g. 500MB), or 'all' for every marked item.",
            valueName: "SIZE"
        )
    )
    var free: String?

    @Flag(help: "With --marked: list what would be removed and remove nothing.")
    var dryRun = false

    @Option(
        help: ArgumentHelp(
            "Stop after this long, e.g. 30s or 5m; the report says what was left.",
            valueName: "DURATION"
        )
    )
    var timeLimit: String?

    func validate() throws {
        if resetAll && marked { throw ValidationError("--reset-all and --marked are different purges: use one") }
        if !marked && (free != nil || dryRun) { throw ValidationError("--free and --dry-run go with --marked") }
        _ = try markedGoal()
        _ = try parsedTimeLimit()
    }

    private func parsedTimeLimit() throws -> Duration? {
        try timeLimit.map { try parseTimeLimit($0) }
    }

    func run() async throws {
        try await Output.run {
            if marked {
                try await purgeMarked()
            } else {
                try await sweep()
            }
        }
    }

    private func sweep() async throws {
        let purgeable = PurgeableDirectories(container: try options.container(), configuration: .quiet)
        let limit = try parsedTimeLimit()
        let report =
            resetAll ? try await purgeable.resetAll(timeLimit: limit) : try await purgeable.sweep(timeLimit: limit)
        if options.json {
            try Output.printJSON(report)
        } else {
            var table = TextTable(header: ["PATH", "POLICY", "REMOVED", "FREED", "LEFT"])
            for directory in report.directories {
                table.append([
                    directory.path + (directory.reachedTimeLimit ? " (time limit)" : ""),
                    directory.policy.description, String(directory.removedCount),
                    directory.bytesFreed.formatted(.compact), directory.remainingBytes.formatted(.compact),
                ])
            }
            if !report.directories.isEmpty { print(table.rendered) }
            print("freed \(report.bytesFreed.formatted(.compact))" + Self.limitNote(report))
        }
        for directory in report.directories {
            if let error = directory.error { Output.warn(error) }
            for failure in directory.failures { Output.warn(failure.description) }
        }
        if !report.isComplete { throw Output.partialFailure }
    }

    /// What `--free` asks for: `nil` is "what the volume needs", `.some(nil)` is everything.
    private func markedGoal() throws -> ByteCount?? {
        guard let free else { return nil }
        if free.lowercased() == "all" { return .some(nil) }
        do {
            return .some(try ByteCount(parsing: free))
        } catch let error as StowageError {
            throw ValidationError("--free: " + error.message + ", or 'all'")
        }
    }

    private func purgeMarked() async throws {
        let container = try options.container()
        let items = MarkedItems(container: container)
        let goal: ByteCount?
        var note: String?
        if let asked = try markedGoal() {
            goal = asked
        } else {
            let monitor = StorageMonitor.Configuration()
            let volume = existingAncestor(of: container.url(for: .caches))
            let capacity = try await VolumeCapacity.forVolume(containing: volume, reserves: monitor.reserves)
            goal = monitor.bytesToRelieve(capacity)
            if goal == .zero {
                note =
                    "no storage pressure (\(capacity.availableForOpportunisticUsage.formatted(.compact)) free for "
                    + "opportunistic data): nothing removed; --free SIZE or --free all removes marked items anyway"
            }
        }
        if dryRun {
            try await listMarked(items, goal: goal, note: note)
            return
        }
        let report = try await items.purge(atLeast: goal, timeLimit: try parsedTimeLimit())
        if options.json {
            try Output.printJSON(report)
        } else {
            if !report.removed.isEmpty { print(Self.table(report.removed).rendered) }
            if let note { print(note) }
            print(
                "freed \(report.bytesFreed.formatted(.compact)); \(report.remaining) marked items left"
                    + (report.reachedTimeLimit ? "; stopped at the time limit" : "")
            )
        }
        for failure in report.failures { Output.warn(failure) }
        if !report.isComplete { throw Output.partialFailure }
    }

    /// `--dry-run`: the items a purge would remove, oldest first, without removing any.
    private func listMarked(_ items: MarkedItems, goal: ByteCount?, note: String?) async throws {
        let scan = try await items.scan()
        var chosen: [MarkedItems.Item] = []
        var bytes = ByteCount.zero
        for item in scan.items {
            if let goal, bytes >= goal { break }
            chosen.append(item)
            bytes += item.bytes
        }
        if options.json {
            try Output.printJSON(MarkedDryRun(wouldRemove: chosen, bytes: bytes, skipped: scan.skipped))
        } else {
            if !chosen.isEmpty { print(Self.table(chosen).rendered) }
            if let note { print(note) }
            print("would free \(bytes.formatted(.compact)) of \(scan.bytes.formatted(.compact)) marked")
        }
        for skipped in scan.skipped { Output.warn(skipped) }
    }

    /// "; stopped at the time limit: N directories not finished", or nothing.
    private static func limitNote(_ report: PurgeReport) -> String {
        guard report.reachedTimeLimit else { return "" }
        let unfinished = report.directories.filter(\.reachedTimeLimit).count
        return "; stopped at the time limit: \(unfinished) directories not finished"
    }

    private static func table(_ items: [MarkedItems.Item]) -> TextTable {
        var table = TextTable(header: ["PATH", "LOCATION", "SIZE", "MODIFIED"])
        for item in items {
            table.append([
                item.path + (item.isDirectory ? "/" : ""), item.location.description,
                item.bytes.formatted(.compact), item.modified.formatted(.iso8601),
            ])
        }
        return table
    }
}

/// `stowage purge --marked --dry-run --json`.
private struct MarkedDryRun: Encodable {
    var wouldRemove: [MarkedItems.Item]
    var bytes: ByteCount
    var skipped: [String]
}

extension PurgeableDirectories.Configuration {
    /// The tool prints what happened itself; the library's log would repeat it.
    static var quiet: Self {
        var logger = Logger(label: "org.stowage.purgeable")
        logger.logLevel = .error
        return Self(logger: logger)
    }
}
