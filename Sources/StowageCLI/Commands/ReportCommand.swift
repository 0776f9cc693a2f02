import ArgumentParser
import Foundation
import StowageCore
import StowageStores

/// `stowage report`: every location of a container with its size and marks, capacity, and the
/// storage account (every store Stowage manages there).
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Show a container's locations (path, size, marks, capacity) and every store in it.",
        discussion: """
            Missing locations are created first, with their marks, as on any first use. The stores \
            table lists each disk cache (from its index), loose cache files, purgeable directory, \
            preference suite, the secret store, each user database and temporary files, with their \
            category (durable, regenerable, temporary). --json adds them under "account".
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await Output.run {
            let container = try options.container()
            let report = try await container.report()
            let account = try await StorageAccountant(container: container).account()
            if options.json {
                try Output.printJSON(ReportDocument(report: report, account: account))
                return
            }
            print(Self.render(report))
            print("")
            print(Self.render(account))
            for issue in account.issues { Output.warn(issue) }
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
                entry.usage.allocatedBytes.formatted(.compact),
                entry.usage.logicalBytes.formatted(.compact),
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
                "Volume of \(entry.location): total \(capacity.total.formatted(.compact)), "
                    + "available \(capacity.available.formatted(.compact)), "
                    + "for important usage \(capacity.availableForImportantUsage.formatted(.compact)), "
                    + "for opportunistic usage \(capacity.availableForOpportunisticUsage.formatted(.compact))"
            )
        }
        return lines.joined(separator: "\n")
    }

    static func render(_ account: StorageAccount) -> String {
        var table = TextTable(header: ["STORE", "KIND", "CATEGORY", "SIZE", "LOGICAL", "ENTRIES", "EXPIRED", "FROM"])
        for store in account.stores {
            table.append([
                store.name,
                store.kind.description,
                store.category.description,
                store.allocatedBytes.formatted(.compact),
                store.logicalBytes.formatted(.compact),
                store.entries.map(String.init) ?? "-",
                store.expiredBytes == .zero ? "-" : store.expiredBytes.formatted(.compact),
                store.source.description,
            ])
        }
        var lines = ["Stores", table.rendered]
        for category in StorageAccount.Category.allCases {
            let totals = account.totals(for: category)
            lines.append(
                "\(category): \(totals.stores) stores, \(totals.allocatedBytes.formatted(.compact)) on disk, "
                    + "\(totals.entries) entries"
                    + (totals.expiredBytes == .zero ? "" : ", \(totals.expiredBytes.formatted(.compact)) expired")
            )
        }
        return lines.joined(separator: "\n")
    }

    /// The JSON document: the container report's fields, and the account under `account`.
    private struct ReportDocument: Encodable {
        let report: ContainerReport
        let account: StorageAccount

        private enum Keys: String, CodingKey { case account }

        func encode(to encoder: any Encoder) throws {
            try report.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(account, forKey: .account)
        }
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
