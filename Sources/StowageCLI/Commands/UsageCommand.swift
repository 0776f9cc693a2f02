import ArgumentParser
import Foundation
import StowageCore

/// `stowage usage PATH...`: disk usage of files and trees, as `du -s -B1` counts it.
struct UsageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usage",
        abstract: "Measure files and directory trees: allocated bytes (as du -s -B1), logical bytes, counts.",
        discussion: """
            Hard links are counted once per PATH, symbolic links are never followed. Entries that
            cannot be read are reported on standard error and the exit status is 1, as with du.
            """
    )

    @Argument(help: "Files or directories to measure.")
    var paths: [String]

    @Flag(help: "Print sizes as exact byte counts instead of human-readable sizes.")
    var bytes = false

    @Flag(name: [.customShort("x"), .long], help: "Skip directories on other file systems, like du -x.")
    var oneFileSystem = false

    @Flag(help: "Also show each immediate child of a directory.")
    var children = false

    @Flag(help: "Print one JSON document on standard output instead of a table.")
    var json = false

    func validate() throws {
        for path in paths { try GlobalOptions.checkPath(path, "usage") }
    }

    func run() async throws {
        try await Output.run {
            let options = DiskUsage.Options(staysOnFileSystem: oneFileSystem, includesChildren: children)
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
