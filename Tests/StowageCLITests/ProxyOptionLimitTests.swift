import Foundation
import StowageTestSupport
import Testing

/// `stowage proxy` with very long option lists, from a `--config` file or the command line:
/// refused at once past the limit, started at the limit. Every run is bounded by the suite's
/// time limit, which kills a proxy that neither listens nor exits (``ProxyProcess``), so a
/// start-up that hangs fails instead of hanging the run.
@Suite(.timeLimit(.minutes(5)))
struct ProxyOptionLimitTests {
    private static func config(headers count: Int, in directory: TemporaryDirectory) throws -> String {
        let file = directory.url.appending(path: "proxy-\(count).json")
        let object: [String: Any] = [
            "upstream": "http://127.0.0.1:1",
            "cache-dir": directory.url.appending(path: "cache").path,
            "cache-key-header": (0..<count).map { "X-H\($0)" },
        ]
        try JSONSerialization.data(withJSONObject: object).write(to: file)
        return file.path
    }

    @Test("a --config with 60,000 cache-key-header entries (under 1 MiB) is refused at once with exit 64")
    func tooManyValuesInConfigRefused() async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = try Self.config(headers: 60_000, in: scratch)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        #expect(size < 1 << 20, "the file must pass the size check for the count check to matter")
        let start = try await ProxyProcess.start(["--listen", "127.0.0.1:0", "--config", file])
        guard case .exited(let outcome) = start else {
            if case .listening(let proxy) = start { try await proxy.stop() }
            Issue.record("the proxy started with 60,000 --cache-key-header values")
            return
        }
        #expect(outcome.status == 64, "\(outcome.standardError)")
        #expect(
            outcome.standardError.contains("--cache-key-header is given 60000 times; at most 1000"),
            "\(outcome.standardError.prefix(500))"
        )
    }

    @Test("1,001 --cache-bypass options on the command line are refused with exit 64")
    func tooManyValuesOnCommandLineRefused() async throws {
        let arguments = (0...1_000).flatMap { ["--cache-bypass", "header:X-Skip-\($0)"] }
        let start = try await ProxyProcess.start(
            ["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1"] + arguments
        )
        guard case .exited(let outcome) = start else {
            if case .listening(let proxy) = start { try await proxy.stop() }
            Issue.record("the proxy started with 1,001 --cache-bypass values")
            return
        }
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("--cache-bypass is given 1001 times; at most 1000"))
    }

    @Test("2,001 arguments in all (no option over its limit) are refused with exit 64; purge takes more URLs")
    func tooManyArgumentsRefused() async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = scratch.url.appending(path: "proxy.json")
        try JSONSerialization.data(withJSONObject: [
            "upstream": "http://127.0.0.1:1",
            "cache-key-header": (0..<1_000).map { "X-H\($0)" },
            "cache-bypass": (0..<999).map { "header:X-B\($0)" },
        ]).write(to: file)
        let start = try await ProxyProcess.start(
            ["--listen", "127.0.0.1:0", "--config", file.path]
        )
        guard case .exited(let outcome) = start else {
            if case .listening(let proxy) = start { try await proxy.stop() }
            Issue.record("the proxy started with 2,001 arguments")
            return
        }
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("is given 2002 arguments; at most 2000"), "\(outcome.standardError)")

        // An `invalidate` that is an option's value, not the subcommand, does not lift the bound.
        let disguised = try await StowageExecutable.run(
            [
                "proxy", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--cache-key-header",
                "invalidate",
            ]
                + (0..<999).flatMap { ["--cache-bypass", "header:X-B\($0)", "--cache-key-ignore-query", "q\($0)"] }
        )
        #expect(disguised.status == 64)
        #expect(
            disguised.standardError.contains("arguments; at most 2000"),
            "\(disguised.standardError.prefix(300))"
        )

        // `invalidate URL…` is not the proxy's own option list: many URLs reach the listener (none here).
        let urls = (0..<2_500).map { "http://example.com/\($0)" }
        let purge = try await StowageExecutable.run(["proxy", "invalidate", "--admin", "127.0.0.1:1"] + urls)
        #expect(purge.status == 2, "\(purge.standardError.prefix(300))")
        #expect(purge.standardError.contains("did not answer"))
    }

    @Test("a --config with 1,000 cache-key-header entries (the limit) starts")
    func configAtTheLimitStarts() async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = try Self.config(headers: 1_000, in: scratch)
        let start = try await ProxyProcess.start(["--listen", "127.0.0.1:0", "--config", file])
        guard case .listening(let proxy) = start else {
            if case .exited(let outcome) = start {
                Issue.record("exit \(outcome.status): \(outcome.standardError.prefix(500))")
            }
            return
        }
        #expect(try await proxy.stop() == 0)
    }
}
