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
            Missing locations are created first, with their marks, as on any first use. A location's size \
            stays on its file system, as du -x: a tree mounted inside it (another device, or a bind mount \
            of the same one) is not counted, since no clear or purge removes it. The stores \
            table lists each disk cache (from its index), loose cache files, purgeable directory, \
            preference suite, the secret store, each user database and temporary files, with their \
            category (durable, regenerable, temporary). --json adds them under "account".

            The backup audit (after Apple's storage guide) shows, per location, the bytes a backup would \
            copy and those it would skip: caches and temporary are never backed up, and a file or \
            directory marked user.xdg.robots.backup=false, or a directory with a CACHEDIR.TAG, is \
            skipped with everything under it. It lists the largest files over --large-file-threshold \
            (default 10MB) that are not excluded, at most 20, and warns when the backed-up total is over \
            --backup-warning (default 100MB). Sizes are allocated bytes, as du -s -B1 counts them. \
            --json carries it under "backupAudit": "backedUpBytes", "excludedBytes", \
            "isOverWarningThreshold", "warning" (only when over), "largeFileCount", "largeFiles" \
            ([{"location", "path" (relative to --root, absolute otherwise), "allocatedBytes", \
            "logicalBytes"}]), "locations" ([{"location", "isExcluded", "backedUp", "excluded" (totals \
            as in "usage"), "issues"}]) and "configuration" ({"largeFileThreshold", "warningThreshold", \
            "maximumListedFiles"}).

            Entries that cannot be read (for a location's size or the backup audit) and stores that \
            cannot be read are reported on standard error, the rest is counted, and the exit status is \
            1, with --json as without. The JSON also carries them, in the "issues" of each location, of \
            each "backupAudit" location and of "account".
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("List files above this size that backups would copy (default 10MB).", valueName: "SIZE"))
    var largeFileThreshold: String?

    @Option(help: ArgumentHelp("Warn when backups would copy more than this (default 100MB).", valueName: "SIZE"))
    var backupWarning: String?

    func validate() throws {
        _ = try auditConfiguration()
    }

    /// The audit's thresholds from the options, read with the library's size parser.
    private func auditConfiguration() throws -> BackupAudit.Configuration {
        var configuration = BackupAudit.Configuration()
        do {
            if let largeFileThreshold { configuration.largeFileThreshold = try ByteCount(parsing: largeFileThreshold) }
        } catch let error as StowageError {
            throw ValidationError("--large-file-threshold: " + error.message)
        }
        do {
            if let backupWarning { configuration.warningThreshold = try ByteCount(parsing: backupWarning) }
        } catch let error as StowageError {
            throw ValidationError("--backup-warning: " + error.message)
        }
        return configuration
    }

    func run() async throws {
        try await Output.run {
            let container = try options.container()
            let report = try await container.report(backupAudit: try auditConfiguration())
            let account = try await StorageAccountant(container: container).account()
            if options.json {
                try Output.printJSON(ReportDocument(report: report, account: account))
            } else {
                print(Self.render(report))
                print("")
                print(Self.render(account))
            }
            // The same in both forms, as `usage` does: a partial report is never a success.
            let unread = report.locations.flatMap(\.issues) + report.backupAudit.locations.flatMap(\.issues)
            let issues = account.issues + unread.map(\.description)
            for issue in issues { Output.warn(issue) }
            if !issues.isEmpty { throw Output.partialFailure }
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
        lines.append("")
        lines.append(render(report.backupAudit))
        return lines.joined(separator: "\n")
    }

    static func render(_ audit: BackupAudit) -> String {
        var table = TextTable(header: ["LOCATION", "BACKED UP", "EXCLUDED", "WHOLE LOCATION"])
        for entry in audit.locations {
            table.append([
                entry.location.description,
                entry.backedUp.allocatedBytes.formatted(.compact),
                entry.excluded.allocatedBytes.formatted(.compact),
                entry.isExcluded ? "excluded" : "backed up",
            ])
        }
        var lines = [
            "Backup audit: \(audit.backedUpBytes.formatted(.compact)) backed up, "
                + "\(audit.excludedBytes.formatted(.compact)) excluded",
            table.rendered,
        ]
        let threshold = audit.configuration.largeFileThreshold.formatted(.compact)
        if audit.largeFileCount == 0 {
            lines.append("No file over \(threshold) is backed up.")
        } else {
            let shown =
                audit.largeFiles.count < audit.largeFileCount ? " (largest \(audit.largeFiles.count) shown)" : ""
            lines.append(
                "\(audit.largeFileCount) file\(audit.largeFileCount == 1 ? "" : "s") over \(threshold) backed up\(shown):"
            )
            var files = TextTable(header: ["SIZE", "LOCATION", "PATH"])
            for file in audit.largeFiles {
                files.append([file.allocatedBytes.formatted(.compact), file.location.description, file.path])
            }
            lines.append(files.rendered)
        }
        if let warning = audit.warning { lines.append("warning: " + warning) }
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
