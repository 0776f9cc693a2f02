import ArgumentParser
import Foundation
import StowageCore

/// `stowage capacity [PATH]`: the four capacity figures of the volume holding a path.
struct CapacityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capacity",
        abstract: "Show the capacity of the volume holding PATH (default: the container's caches location).",
        discussion: """
            Important usage keeps 1% of the volume (at most 1 GB) free; opportunistic usage keeps \
            10% (at most 10 GB) free. Change them with --important-reserve and --opportunistic-reserve.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "A path on the volume to examine.")
    var path: String?

    @Flag(help: "Print sizes as exact byte counts.")
    var bytes = false

    @Option(
        help: ArgumentHelp("Space to keep free from important data, e.g. 500MB.", valueName: "SIZE"),
        transform: { try parseSize($0) }
    )
    var importantReserve: ByteCount?

    @Option(
        help: ArgumentHelp("Space to keep free from opportunistic data, e.g. 5GB.", valueName: "SIZE"),
        transform: { try parseSize($0) }
    )
    var opportunisticReserve: ByteCount?

    func run() async throws {
        try await Output.run {
            var reserves = VolumeCapacity.Reserves()
            if let importantReserve { reserves.important = .bytes(importantReserve) }
            if let opportunisticReserve { reserves.opportunistic = .bytes(opportunisticReserve) }
            let url = try path.map { URL(filePath: $0) } ?? existingAncestor(of: options.container().url(for: .caches))
            let capacity = try await VolumeCapacity.forVolume(containing: url, reserves: reserves)
            if options.json {
                try Output.printJSON(capacity)
                return
            }
            let size = { (count: ByteCount) in bytes ? String(count.rawValue) : count.formatted(.compact) }
            var table = TextTable(header: ["TOTAL", "AVAILABLE", "IMPORTANT", "OPPORTUNISTIC", "PATH"])
            table.append([
                size(capacity.total), size(capacity.available), size(capacity.availableForImportantUsage),
                size(capacity.availableForOpportunisticUsage), url.fileSystemPath,
            ])
            print(table.rendered)
        }
    }

}

/// The nearest existing directory at or above `url`, so capacity works before first use.
func existingAncestor(of url: URL) -> URL {
    var current = url
    while !FileManager.default.fileExists(atPath: current.fileSystemPath),
        current.fileSystemPath != "/"
    {
        current = current.deletingLastPathComponent()
    }
    return current
}

/// Parses a size option, turning a library error into a usage error.
func parseSize(_ text: String) throws -> ByteCount {
    do {
        return try ByteCount(parsing: text)
    } catch let error as StowageError {
        throw ValidationError(error.message)
    }
}
