import ArgumentParser
import Foundation
import StowageCore

/// `stowage usage PATH...`: disk usage of files and trees, as `du -s -B1` counts it.
struct UsageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usage",
        abstract: "Measure files and directory trees: allocated bytes (as du -s -B1), logical bytes, counts.",
        discussion: """
            Hard links are counted once per PATH, symbolic links are never followed. Entries that \
            cannot be read are reported on standard error and the exit status is 1, as with du.

            --exclude GLOB (repeatable) skips every file or directory below PATH whose name matches \
            the shell pattern (*, ?, [...] as in fnmatch), with everything under it, like du's \
            --exclude. The pattern is matched against names only, so it may not contain '/'; du also \
            matches it against whole paths, which only differs when a * or ? would have to match a \
            '/'. An empty pattern or one with '/' is a usage error (exit 64).

            Examples:
              stowage usage --children ~/.cache
              stowage usage --exclude '.DS*' --exclude '*.log' --bytes DIR
              stowage usage -x --json /var/lib/app
            """
    )

    @Argument(help: "Files or directories to measure.")
    var paths: [String]

    @Flag(help: "Print sizes as exact byte counts instead of human-readable sizes.")
    var bytes = false

    @Flag(
        name: [.customShort("x"), .long],
        help: "Skip directories on other file systems, like du -x, and bind mounts of the same one."
    )
    var oneFileSystem = false

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp(
            "Skip files and directories whose name matches this shell pattern (repeatable).",
            valueName: "GLOB"
        )
    )
    var exclude: [String] = []

    @Flag(help: "Also show each immediate child of a directory.")
    var children = false

    @Flag(help: "Print one JSON document on standard output instead of a table.")
    var json = false

    func validate() throws {
        for path in paths { try GlobalOptions.checkPath(path, "usage") }
        _ = try patterns()
    }

    /// The --exclude patterns, read by the library so the CLI and library refuse the same ones.
    private func patterns() throws -> [NamePattern] {
        do {
            return try exclude.map { try NamePattern($0) }
        } catch let error as StowageError {
            throw ValidationError("--exclude: " + error.message)
        }
    }

    func run() async throws {
        try await Output.run {
            let options = DiskUsage.Options(
                staysOnFileSystem: oneFileSystem,
                includesChildren: children,
                excluding: try patterns()
            )
            var results: [DiskUsage] = []
            for path in paths {
                results.append(try await DiskUsage.measure(URL(filePath: path), options: options))
            }
            if json {
                try Output.printJSON(results)
            } else {
                print(render(results))
            }
            let issues = results.flatMap(\.issues)
            for issue in issues { Output.warn(issue.description) }
            if !issues.isEmpty { throw Output.partialFailure }
        }
    }

    private func render(_ results: [DiskUsage]) -> String {
        var table = TextTable(header: ["SIZE", "LOGICAL", "FILES", "DIRS", "PATH"])
        for usage in results {
            for child in usage.children {
                table.append(
                    row(
                        child.totals,
                        path: usage.path.hasSuffix("/") ? usage.path + child.name : usage.path + "/" + child.name
                    )
                )
            }
            table.append(row(usage.totals, path: usage.path))
        }
        return table.rendered
    }

    private func row(_ totals: DiskUsage.Totals, path: String) -> [String] {
        let size = { (count: ByteCount) in bytes ? String(count.rawValue) : count.formatted(.compact) }
        return [
            size(totals.allocatedBytes), size(totals.logicalBytes), String(totals.fileCount),
            String(totals.directoryCount), path,
        ]
    }
}
