import Foundation
import StowageTestSupport
import Testing

/// Durations an operator may mistype, on the command line and in `--config`: each is exit 64
/// with "at most …", never a crash at start (they used to die with SIGILL: "Double value cannot
/// be converted to Int64", "arithmetic overflow").
@Suite struct ProxyHugeValueTests {
    static let upstream = ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]

    @Test(
        "huge durations and timeouts are usage errors (exit 64) that say the limit",
        arguments: [
            (["--stale-if-error", "10000000000s"], "at most"),
            (["--stale-while-updating", "9999999999999d"], "at most"),
            (["--cache-valid", "200=9999999999999d"], "at most"),
            (["--upstream-timeout", "9999999999999"], "from 1 to 86400"),
            (["--request-body-timeout", "9223372036854775807"], "from 1 to 86400"),
            (["--client-header-timeout", "0"], "from 1 to 86400"),
            (["--keepalive-timeout=-5"], "from 1 to 86400"),
            (["--stale-if-error", "nan"], "is not a duration"),
            (["--stale-if-error", "inf"], "is not a duration"),
            (["--cache-set-cookie", "maybe"], "no-store, strip or store"),
        ]
    )
    func hugeValuesAreUsageErrors(options: [String], message: String) async throws {
        let outcome = try await StowageExecutable.run(Self.upstream + options)
        #expect(outcome.status == 64, "\(options): \(outcome.standardError)")
        #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
    }

    @Test("the same values through --config are refused the same way")
    func hugeValuesInConfig() async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        for (key, value, message) in [
            ("stale-if-error", "\"10000000000s\"", "at most"), ("cache-valid", "[\"200=9999999999999d\"]", "at most"),
            ("upstream-timeout", "9999999999999", "from 1 to 86400"),
        ] {
            let file = scratch.url.appending(path: "\(key).json")
            try Data(#"{"upstream": "http://127.0.0.1:9", "\#(key)": \#(value)}"#.utf8).write(to: file)
            let outcome = try await StowageExecutable.run(["proxy", "--config", file.path, "--listen", "127.0.0.1:0"])
            #expect(outcome.status == 64, "\(key): \(outcome.standardError)")
            #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
        }
    }
}
