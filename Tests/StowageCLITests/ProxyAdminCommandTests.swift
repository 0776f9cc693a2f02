import Foundation
import HTTPTypes
import StowageHTTPTestSupport
import StowageTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `stowage proxy invalidate` and the admin token, end to end: a real proxy process, a real
/// origin, the real `stowage` client. The time limit catches a hang only: a proxy that neither
/// listens nor exits is killed then (``ProxyProcess``).
@Suite(.timeLimit(.minutes(5)))
struct ProxyAdminCommandTests {
    /// The test process's environment without `$STOWAGE_ADMIN_TOKEN`: the token comes only from
    /// what each test gives.
    private static var environment: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key != "STOWAGE_ADMIN_TOKEN" }
    }

    private static func startProxy(
        _ arguments: [String],
        environment: [String: String] = Self.environment
    ) async throws -> ProxyProcess {
        switch try await ProxyProcess.start(
            ["--listen", "127.0.0.1:0"] + arguments,
            expectsAdmin: arguments.contains("--admin-listen"),
            environment: environment
        ) {
        case .listening(let proxy):
            return proxy
        case .exited(let outcome):
            throw TestFailure("stowage proxy exited \(outcome.status): \(outcome.standardError)")
        }
    }

    // MARK: - --admin-token reaches invalidate

    @Test(
        "invalidate (by URL and by tag) --admin-token TOKEN give the token to the listener (not only $STOWAGE_ADMIN_TOKEN)"
    )
    func adminTokenOptionReachesSubcommands() async throws {
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=600"), ("Surrogate-Key", "product-42")], body: "v\(r.index)")
        }
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let token = "s3cret-Token_1.2~+/=="
        let proxy = try await Self.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", scratch.path,
            "--admin-listen", "127.0.0.1:0", "--admin-token", token,
        ])
        let adminPort = try #require(proxy.adminPort)
        let page = try #require(URL(string: "http://127.0.0.1:\(proxy.port)/page"))
        _ = try await URLSession.shared.data(from: page)

        let purged = try await StowageExecutable.run(
            [
                "proxy", "invalidate", "--admin", "127.0.0.1:\(adminPort)", "--admin-token", token,
                "\(origin.baseURL)/page",
            ],
            environment: Self.environment
        )
        #expect(purged.status == 0, "\(purged.standardError)")
        #expect(purged.standardOutput == "removed \(origin.baseURL)/page\n")

        _ = try await URLSession.shared.data(from: page)
        // The order of `invalidate --help`'s example.
        let banned = try await StowageExecutable.run(
            [
                "proxy", "invalidate", "--tag", "product-42", "--admin", "127.0.0.1:\(adminPort)", "--admin-token",
                token,
            ],
            environment: Self.environment
        )
        #expect(banned.status == 0, "\(banned.standardError)")
        #expect(banned.standardOutput == "removed 1\n")

        let wrong = try await StowageExecutable.run(
            ["proxy", "invalidate", "--tag", "x", "--admin", "127.0.0.1:\(adminPort)", "--admin-token", "other"],
            environment: Self.environment
        )
        #expect(wrong.status == 2)
        #expect(wrong.standardError.contains("401"), "\(wrong.standardError)")
        #expect(try await proxy.stop() == 0)
        await origin.stop()
    }

    // MARK: - Tokens no client can send

    @Test(
        "an admin token no client can send (empty, blank, CR/LF, control or non-ASCII bytes) is refused at start, exit 64",
        arguments: ["", " ", "   ", "a b", "tok\r\nX-Injected: 1", "tok\n", "t\u{7}k", "tök", "t\tk", "\u{1F511}"]
    )
    func unsendableTokenRefused(token: String) async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let base = ["--upstream", "http://127.0.0.1:1", "--cache-dir", scratch.path, "--admin-listen", "127.0.0.1:0"]
        let config = scratch.url.appending(path: "proxy.json")
        try JSONSerialization.data(withJSONObject: ["admin-token": token]).write(to: config)
        var withVariable = Self.environment
        withVariable["STOWAGE_ADMIN_TOKEN"] = token
        // The option, $STOWAGE_ADMIN_TOKEN, and the --config file.
        let ways: [(String, [String], [String: String])] = [
            ("--admin-token", base + ["--admin-token=\(token)"], Self.environment),
            ("$STOWAGE_ADMIN_TOKEN", base, withVariable),
            ("--config", base + ["--config", config.path], Self.environment),
        ]
        for (way, arguments, environment) in ways {
            let start = try await ProxyProcess.start(
                ["--listen", "127.0.0.1:0"] + arguments,
                environment: environment
            )
            guard case .exited(let outcome) = start else {
                if case .listening(let proxy) = start { try await proxy.stop() }
                Issue.record("\(way) \(token.debugDescription): the proxy started with a token no client can send")
                continue
            }
            #expect(outcome.status == 64, "\(way) \(token.debugDescription): \(outcome.standardError)")
            // ArgumentParser itself refuses an empty `--admin-token=` (also what the file gives).
            let empty = token.isEmpty && way != "$STOWAGE_ADMIN_TOKEN"
            #expect(
                outcome.standardError.contains(
                    empty ? "Missing value for '--admin-token" : "a token is 1 to 4096 of A-Z a-z 0-9 - . _ ~ + /"
                ),
                "\(way) \(token.debugDescription): \(outcome.standardError)"
            )
        }
    }

    @Test("invalidate --admin-token with a token no listener can take is a usage error (exit 64), nothing sent")
    func unsendableClientTokenRefused() async throws {
        let outcome = try await StowageExecutable.run(
            ["proxy", "invalidate", "--admin", "127.0.0.1:1", "--admin-token", "a\r\nb", "http://example.com/"],
            environment: Self.environment
        )
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("--admin-token"), "\(outcome.standardError)")
    }

    // MARK: - The main listener is not the admin listener

    @Test(
        "invalidate --admin <the main listener> exits 2 saying it is not an admin listener; the origin never sees the token",
        arguments: [false, true]
    )
    func purgeAtMainListenerRefused(originImpersonatesAdmin: Bool) async throws {
        let authorizations = Mutex<[String]>([])
        let origin = try await TestOriginServer.start { received in
            if let authorization = received.head.headerFields[.authorization] {
                authorizations.withLock { $0.append(authorization) }
            }
            if originImpersonatesAdmin {
                // An origin answering as the admin listener would, to be sent the token.
                return .init(
                    status: 401,
                    fields: [("Stowage-Admin", "1"), ("WWW-Authenticate", #"Bearer realm="stowage-admin""#)]
                )
            }
            return .init(status: 404, body: "no such page")
        }
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let token = "s3cret"
        let proxy = try await Self.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", scratch.path,
            "--admin-listen", "127.0.0.1:0", "--admin-token", token,
        ])
        let main = "127.0.0.1:\(proxy.port)"
        let purge = try await StowageExecutable.run(
            ["proxy", "invalidate", "--admin", main, "--admin-token", token, "\(origin.baseURL)/page"],
            environment: Self.environment
        )
        #expect(purge.status == 2, "\(purge.standardOutput) \(purge.standardError)")
        #expect(purge.standardError.contains("\(main) is not a stowage admin listener"), "\(purge.standardError)")
        #expect(!purge.standardOutput.contains("not stored"))
        var withVariable = Self.environment
        withVariable["STOWAGE_ADMIN_TOKEN"] = token
        let ban = try await StowageExecutable.run(
            ["proxy", "invalidate", "--prefix", origin.baseURL, "--admin", main],
            environment: withVariable
        )
        #expect(ban.status == 2)
        #expect(ban.standardError.contains("is not a stowage admin listener"), "\(ban.standardError)")
        #expect(origin.requestCount >= 1, "the requests went through the main listener to the origin")
        #expect(authorizations.withLock { $0 }.isEmpty, "the origin received the admin token")
        #expect(try await proxy.stop() == 0)
        await origin.stop()
    }
}
