import ArgumentParser
import Foundation
import StowageCore
import StowageSecrets

/// `stowage secrets …`: the app's private secret store (key file in the preferences tree).
struct SecretsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets",
        abstract: "Store, read, list and remove the app's encrypted secrets.",
        subcommands: [
            SecretsListCommand.self, SecretsSetCommand.self, SecretsGetCommand.self, SecretsRemoveCommand.self,
        ],
        defaultSubcommand: SecretsListCommand.self
    )
}

/// `stowage secrets list`: service and account of each item; never the secrets.
struct SecretsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List services and accounts.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await Output.run {
            let items = try SecretStore.open(in: options.container()).items()
            var table = TextTable(header: ["SERVICE", "ACCOUNT"])
            for item in items { table.append([item.service, item.account]) }
            print(table.rendered)
        }
    }
}

/// `stowage secrets set SERVICE ACCOUNT`: the secret is read from standard input, so it never
/// appears in the process list or the shell history.
struct SecretsSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store the secret read from standard input (one trailing newline is dropped)."
    )

    @OptionGroup var options: GlobalOptions
    @Argument var service: String
    @Argument var account: String

    func run() async throws {
        var secret = FileHandle.standardInput.readDataToEndOfFile()
        if secret.last == 0x0A { secret.removeLast() }
        try await Output.run {
            try SecretStore.open(in: options.container()).set(secret, service: service, account: account)
        }
    }
}

/// `stowage secrets get SERVICE ACCOUNT`: prints the secret; exit 2 when there is none.
struct SecretsGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a secret.")

    @OptionGroup var options: GlobalOptions
    @Argument var service: String
    @Argument var account: String

    func run() async throws {
        try await Output.run {
            guard let secret = try SecretStore.open(in: options.container()).secret(service: service, account: account)
            else {
                throw StowageError(code: .notFound, message: "no secret for \(service)/\(account)")
            }
            FileHandle.standardOutput.write(secret + Data("\n".utf8))
        }
    }
}

/// `stowage secrets remove SERVICE ACCOUNT`.
struct SecretsRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a secret.")

    @OptionGroup var options: GlobalOptions
    @Argument var service: String
    @Argument var account: String

    func run() async throws {
        try await Output.run {
            let removed = try SecretStore.open(in: options.container()).remove(service: service, account: account)
            print(removed ? "removed" : "no secret for \(service)/\(account)")
        }
    }
}
