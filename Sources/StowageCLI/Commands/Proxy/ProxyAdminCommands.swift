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

/// `stowage proxy invalidate URL… | --prefix P | --tag T`: removes stored responses from a running
/// proxy through its admin listener (Varnish's purge and ban; "purge" alone is `stowage purge`,
/// which frees space).
struct ProxyInvalidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invalidate",
        abstract:
            "Remove stored responses from a running proxy's cache: by URL, URL prefix or tag (its admin listener).",
        discussion: """
            URLs are the upstream's (the cache's keys). With URLs, prints 'removed URL' or 'not stored URL' \
            per URL; with --prefix or --tag (a Surrogate-Key / Cache-Tag value), 'removed N' (the URLs \
            removed). Exit 0 either way, 2 when the listener cannot be reached or refuses.

            Examples:
              stowage proxy invalidate https://example.com/a https://example.com/b
              stowage proxy invalidate --prefix https://example.com/img/
              stowage proxy invalidate --tag product-42 --admin 10.0.0.5:9000 \\
                --admin-token "$TOKEN"
            """
    )

    @OptionGroup var address: AdminAddressOptions

    @ParentCommand var proxy: ProxyCommand

    @Option(help: ArgumentHelp("Remove every URL that starts with this.", valueName: "URL_PREFIX"))
    var prefix: String?

    @Option(help: ArgumentHelp("Remove every response the origin tagged with this.", valueName: "TAG"))
    var tag: String?

    @Argument(help: "Absolute URLs to remove.")
    var urls: [String] = []

    func validate() throws {
        let given = (urls.isEmpty ? 0 : 1) + (prefix == nil ? 0 : 1) + (tag == nil ? 0 : 1)
        guard given == 1 else {
            throw ValidationError("give URLs, or --prefix URL_PREFIX, or --tag TAG: exactly one of the three")
        }
        if prefix?.isEmpty == true || tag?.isEmpty == true {
            throw ValidationError("--prefix and --tag need a value that is not empty")
        }
    }

    func run() async throws {
        try await address.withClient(parent: proxy) { client in
            if let prefix {
                print("removed \(try await client.invalidate(urlPrefix: prefix))")
            } else if let tag {
                print("removed \(try await client.invalidate(tag: tag))")
            } else {
                for url in urls {
                    print(try await client.invalidate(url: url) ? "removed \(url)" : "not stored \(url)")
                }
            }
        }
    }
}
