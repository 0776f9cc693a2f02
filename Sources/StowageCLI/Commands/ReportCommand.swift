import ArgumentParser
import Foundation
import StowageCore

/// `stowage report`: every location of a container with its size and marks, and capacity.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Show every location of a container: path, size, files, marks, and the volume's capacity.",
        discussion: "Missing locations are created first, with their marks, as on any first use."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await Output.run {
            let report = try await options.container().report()
            if options.json {
                try Output.printJSON(report)
                return
            }
            print(Self.render(report))
            for location in report.locations {
                for issue in location.issues { Output.warn(issue.description) }
            }
            if report.locations.contains(where: { !$0.issues.isEmpty }) { throw Output.partialFailure }
        }
    }

    static func render(_ report: ContainerReport) -> String {
        var lines = ["Container \(report.identifier)" + (report.root.map { " (rooted at \($0))" } ?? "")]
        var table = TextTable(header: [
            "LOCATION", "SIZE", "LOGICAL", "FILES", "DIRS", "BACKUP", "PURGEABLE", "TAG", "PATH",
        ])
        for entry in report.locations {
            table.append([
                entry.location.description,
                entry.usage.allocatedBytes.formatted(.seed),
                entry.usage.logicalBytes.formatted(.seed),
                String(entry.usage.fileCount),
                String(entry.usage.directoryCount),
                backupColumn(entry),
                markColumn(entry.purgeable),
                entry.hasCacheDirectoryTag ? "CACHEDIR.TAG" : "-",
                entry.path,
            ])
        }
        lines.append(table.rendered)
        lines.append("")
        var seenVolumes = Set<UInt64>()
        for entry in report.locations where seenVolumes.insert(entry.capacity.volumeID).inserted {
            let capacity = entry.capacity
            lines.append(
                "Volume of \(entry.location): total \(capacity.total.formatted(.seed)), "
                    + "available \(capacity.available.formatted(.seed)), "
                    + "for important usage \(capacity.availableForImportantUsage.formatted(.seed)), "
                    + "for opportunistic usage \(capacity.availableForOpportunisticUsage.formatted(.seed))"
            )
        }
        return lines.joined(separator: "\n")
    }

    private static func backupColumn(_ entry: ContainerReport.LocationReport) -> String {
        switch entry.excludedFromBackup {
        case .set: "excluded"
        case .unset: "included"
        case .unsupported: entry.isBackedUp ? "included" : "no xattrs"
        }
    }

    private static func markColumn(_ status: ContainerReport.MarkStatus) -> String {
        switch status {
        case .set: "yes"
        case .unset: "no"
        case .unsupported: "no xattrs"
        }
    }
}
