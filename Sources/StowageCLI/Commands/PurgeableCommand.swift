import ArgumentParser
import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping

/// `stowage purgeable add|list|remove`: the container's purgeable-directory registrations.
struct PurgeableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purgeable",
        abstract:
            "Register, list and remove purgeable directories: folders emptied by age or size when space runs low.",
        subcommands: [Add.self, List.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a directory (created if missing) or update its policy and cap.",
            discussion: """
                PATH is a container path such as Documents/SomePath or Library/Caches/feeds.

                Examples:
                  stowage purgeable add Library/Caches/feeds --policy 7d --cap 200MB
                  stowage purgeable add Documents/Downloads --policy manual
                """
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The directory, relative to the container.")
        var path: String

        @Option(
            help: ArgumentHelp(
                "'manual' or an age in days: 3d, 7d, 14d, 30d, ... (files older than that are swept).",
                valueName: "POLICY"
            )
        )
        var policy: String

        // Unconditional, so '--cap -1MB' reaches the size parser (and its message) instead of
        // being taken for an unknown option and reported as a missing value.
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Size cap, e.g. 200MB: over it a sweep deletes the oldest files down to half the cap.",
                valueName: "SIZE"
            )
        )
        var cap: String?

        func validate() throws {
            do {
                _ = try PurgePolicy(parsing: policy)
                if let cap { _ = try ByteCount(parsing: cap) }
            } catch let error as StowageError {
                throw ValidationError(error.message)
            }
        }

        func run() async throws {
            try await Output.run {
                let purgeable = PurgeableDirectories(container: try options.container(), configuration: .quiet)
                let url = try await purgeable.register(
                    path,
                    policy: try PurgePolicy(parsing: policy),
                    sizeCap: try cap.map { try ByteCount(parsing: $0) }
                )
                if options.json {
                    try Output.printJSON(["path": path, "fileSystemPath": url.fileSystemPath])
                } else {
                    print("Registered \(path) (\(url.fileSystemPath))")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered directories and their sizes.")

        @OptionGroup var options: GlobalOptions

        struct Row: Encodable {
            var path: String
            var policy: String
            var sizeCap: ByteCount?
            var fileSystemPath: String
            /// What a sweep could free: `nil` when the directory is missing or is skipped.
            var allocatedBytes: ByteCount?
            /// Why a sweep leaves the directory whole (`"skipped: another file system"` for a
            /// mount point), else `nil`.
            var skipped: String?
            /// Why the directory could not be measured, in the words a sweep reports it with (a
            /// file or a link out of the container at the path, a directory it cannot open), else
            /// `nil`: such a registration is not "missing", and a purge fails on it.
            var error: String?
        }

        func run() async throws {
            try await Output.run {
                let container = try options.container()
                let purgeable = PurgeableDirectories(container: container, configuration: .quiet)
                var rows: [Row] = []
                for directory in try await purgeable.registrations() {
                    let location = try purgeable.url(for: directory.path)
                    // Like du -x: a mount inside is another file system's, which no sweep frees;
                    // a directory that is itself a mount point is left whole by the sweep.
                    var row = Row(
                        path: directory.path,
                        policy: directory.policy.description,
                        sizeCap: directory.sizeCap,
                        fileSystemPath: location.fileSystemPath
                    )
                    do {
                        switch try await purgeable.holding(directory.path) {
                        case .allocated(let bytes): row.allocatedBytes = bytes
                        case .otherFileSystem: row.skipped = FileSystemBoundary.skipMessage
                        case .missing: break
                        }
                    } catch {
                        // As the sweep words it (PurgeSweep.open), and exit 1 as `report` does for
                        // what it cannot read: listed as "missing", a registration the purge then
                        // fails on looked like one it would merely skip.
                        row.error = (error as? StowageError)?.message ?? "\(error)"
                    }
                    rows.append(row)
                }
                let errors = rows.compactMap(\.error)
                if options.json {
                    try Output.printJSON(rows)
                } else {
                    var table = TextTable(header: ["PATH", "POLICY", "CAP", "SIZE", "LOCATION"])
                    for row in rows {
                        let size = row.skipped ?? row.allocatedBytes?.formatted(.compact)
                        table.append([
                            row.path, row.policy, row.sizeCap?.formatted(.compact) ?? "-",
                            size ?? (row.error == nil ? "missing" : "error"), row.fileSystemPath,
                        ])
                    }
                    print(rows.isEmpty ? "No purgeable directories are registered." : table.rendered)
                }
                for error in errors { Output.warn(error) }
                if !errors.isEmpty { throw Output.partialFailure }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget a registration; the directory and its files stay."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The registered directory, relative to the container.")
        var path: String

        func run() async throws {
            try await Output.run {
                let purgeable = PurgeableDirectories(container: try options.container(), configuration: .quiet)
                guard try await purgeable.unregister(path) else {
                    Output.warn("'\(path)' is not registered; see 'stowage purgeable list'")
                    throw Output.partialFailure
                }
                if !options.json { print("Removed the registration of \(path); its files stay.") }
            }
        }
    }
}
