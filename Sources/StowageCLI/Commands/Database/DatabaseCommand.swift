import ArgumentParser
import Foundation
import GRDB
import StowageCore
import StowageDatabase

/// `stowage db …`: the per-user databases of the container.
struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "List, back up and remove the per-user databases (application support/databases).",
        subcommands: [DatabaseUsersCommand.self, DatabaseBackupCommand.self, DatabaseRemoveCommand.self],
        defaultSubcommand: DatabaseUsersCommand.self
    )
}

/// Options every `db` subcommand takes.
struct DatabaseOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions

    @Option(help: "The database name (the file is NAME.sqlite in each user's directory).")
    var name = "main"

    /// The databases, with no migrations: the tool never changes a schema.
    func databases() throws -> UserDatabases {
        UserDatabases(container: try global.container(), name: name, migrator: DatabaseMigrator())
    }
}

/// `stowage db users`.
struct DatabaseUsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "users", abstract: "List the users with a database.")

    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        try await Output.run {
            let users = try options.databases().users()
            if options.global.json {
                try Output.printJSON(users)
            } else {
                for user in users { print(user) }
            }
        }
    }
}

/// `stowage db backup USER FILE`.
struct DatabaseBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy USER's database into a new SQLite file, consistently even while it is in use."
    )

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The user whose database to copy.")
    var user: String

    @Argument(help: "The new file to write (must not exist).")
    var file: String

    func run() async throws {
        try await Output.run { try await options.databases().backup(user: user, to: URL(filePath: file)) }
    }
}

/// `stowage db remove USER`.
struct DatabaseRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Delete USER's database directory (database, WAL and shared-memory files).",
        discussion: """
            A mount point inside the directory, or the directory itself when it is one (another \
            file system, or a bind mount of the same one), is left in place with everything \
            under it, as rm --one-file-system does: it is named on standard error as \
            "PATH: skipped: another file system" (in "skipped" with --json), and the exit status \
            is 1. Everything else is deleted.
            """
    )

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The user whose database to delete.")
    var user: String

    func run() async throws {
        try await Output.run {
            let removal = try await options.databases().removeUser(user)
            if options.global.json {
                try Output.printJSON(removal)
            } else {
                if removal.removed {
                    print("removed \(user)")
                } else {
                    // A directory that is itself a mount point stays: "no database" would be wrong.
                    print(removal.skipped.isEmpty ? "no database for \(user)" : "kept \(user): another file system")
                }
            }
            for skipped in removal.skipped { Output.warn(skipped.description) }
            if !removal.skipped.isEmpty { throw Output.partialFailure }
        }
    }
}
