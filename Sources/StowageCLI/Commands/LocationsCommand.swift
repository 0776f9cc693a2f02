import ArgumentParser
import Foundation
import StowageCore

/// `stowage locations`: where a container's five locations are, without creating them.
struct LocationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locations",
        abstract: "Print where the container's five locations are (nothing is created)."
    )

    @OptionGroup var options: GlobalOptions

    private struct Entry: Encodable {
        var location: Location
        var path: String
        var isBackedUp: Bool
        var purgePolicy: Location.PurgePolicy
    }

    func run() async throws {
        try await Output.run {
            let container = try options.container()
            let entries = Location.allCases.map { location in
                Entry(
                    location: location,
                    path: container.url(for: location).fileSystemPath,
                    isBackedUp: location.isBackedUp,
                    purgePolicy: location.purgePolicy
                )
            }
            if options.json {
                try Output.printJSON(entries)
                return
            }
            var table = TextTable(header: ["LOCATION", "BACKED UP", "PURGED", "PATH"])
            for entry in entries {
                table.append([
                    entry.location.description, entry.isBackedUp ? "yes" : "no",
                    Self.describe(entry.purgePolicy), entry.path,
                ])
            }
            print(table.rendered)
        }
    }

    private static func describe(_ policy: Location.PurgePolicy) -> String {
        switch policy {
        case .never: "never"
        case .underStoragePressure: "under storage pressure"
        case .anyTime: "any time"
        }
    }
}
