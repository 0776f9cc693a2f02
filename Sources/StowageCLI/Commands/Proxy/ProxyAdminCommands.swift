import ArgumentParser
import Foundation
import StowageCore
import StowageProxy

/// Where a running proxy's admin listener is, and its token: the options every admin command shares.
struct AdminAddressOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The proxy's admin listener (its --admin-listen).", valueName: "HOST:PORT"))
    var admin = "127.0.0.1:9000"

    // Declared for the help screen only: `proxy` declares `--admin-token` too, and ArgumentParser
    // gives an option both declare to the parent, so the value arrives through `@ParentCommand`.
    @Option(help: ArgumentHelp("The admin token. Default: $STOWAGE_ADMIN_TOKEN.", valueName: "TOKEN"))
    var adminToken: String?

    func validate() throws {
        do { _ = try ProxyAdminClient(address: admin) } catch let error as StowageError {
            throw ValidationError("--admin: \(error.message)")
        }
    }

    /// The token to give: `--admin-token` (parsed into `proxy`), else `$STOWAGE_ADMIN_TOKEN`.
    func token(parent: ProxyCommand) -> String? {
        adminToken ?? parent.adminToken ?? ProcessInfo.processInfo.environment["STOWAGE_ADMIN_TOKEN"]
    }

    /// Runs `body` with a client for the listener; a token no listener can take is a usage
    /// error (exit 64), a listener that cannot be reached or refuses is a message on standard
    /// error and exit 2.
    func withClient(parent: ProxyCommand, _ body: (ProxyAdminClient) async throws -> Void) async throws {
        let client: ProxyAdminClient
        do {
            client = try ProxyAdminClient(address: admin, token: token(parent: parent))
        } catch let error as StowageError {
            throw ValidationError("--admin-token: \(error.message)")
        }
        do {
            try await body(client)
        } catch let error as StowageError {
            Output.warn(error.message)
            throw Output.failure
        }
    }
}

/// `stowage proxy purge URL…`: removes URLs' stored responses from a running proxy.
struct ProxyPurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove the stored responses of URLs from a running proxy's cache (its admin listener).",
        discussion: """
            Example: stowage proxy purge --admin 127.0.0.1:9000 https://example.com/a https://example.com/b

            URLs are the upstream's (the cache's keys). Prints 'purged URL' or 'not stored URL' per URL; \
            exit 0 either way, 2 when the listener cannot be reached or refuses.
            """
    )

    @OptionGroup var address: AdminAddressOptions

    @ParentCommand var proxy: ProxyCommand

    @Argument(help: "Absolute URLs to purge.")
    var urls: [String]

    func run() async throws {
        try await address.withClient(parent: proxy) { client in
            for url in urls {
                print(try await client.purge(url: url) ? "purged \(url)" : "not stored \(url)")
            }
        }
    }
}

/// `stowage proxy ban --prefix P | --tag T`: removes many stored responses from a running proxy.
struct ProxyBanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ban",
        abstract:
            "Remove every stored response under a URL prefix, or tagged with a Surrogate-Key/Cache-Tag, from a running proxy.",
        discussion: """
            Examples: stowage proxy ban --prefix https://example.com/img/
                      stowage proxy ban --tag product-42 --admin 10.0.0.5:9000 --admin-token "$TOKEN"

            Prints 'banned N' (the URLs removed).
            """
    )

    @OptionGroup var address: AdminAddressOptions

    @ParentCommand var proxy: ProxyCommand

    @Option(help: ArgumentHelp("Remove every URL that starts with this.", valueName: "URL_PREFIX"))
    var prefix: String?

    @Option(help: ArgumentHelp("Remove every response the origin tagged with this.", valueName: "TAG"))
    var tag: String?

    func validate() throws {
        let given = [prefix, tag].compactMap { $0 }
        guard given.count == 1, given[0].isEmpty == false else {
            throw ValidationError("give exactly one of --prefix URL_PREFIX or --tag TAG, not empty")
        }
    }

    func run() async throws {
        try await address.withClient(parent: proxy) { client in
            let count: Int
            if let prefix {
                count = try await client.ban(prefix: prefix)
            } else {
                count = try await client.ban(tag: tag ?? "")
            }
            print("banned \(count)")
        }
    }
}
