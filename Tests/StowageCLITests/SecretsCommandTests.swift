import Foundation
import StowageTestSupport
import Testing

@Suite("stowage secrets end to end")
struct SecretsCommandTests {
    @Test("set from standard input, list without secrets, get, remove")
    func roundTrip() async throws {
        try await withTemporaryDirectory { root in
            let base = ["--root", root.path]
            let stowage = StowageExecutable.url.path
            let set = try await StowageExecutable.runProcess([
                "/bin/sh", "-c",
                "printf 'hunter2\\n' | '\(stowage)' secrets set api.example.com ada --root '\(root.path)'",
            ])
            #expect(set.status == 0, "\(set.standardError)")
            let list = try await StowageExecutable.run(["secrets", "list"] + base)
            #expect(list.standardOutput.contains("api.example.com  ada"))
            #expect(!list.standardOutput.contains("hunter2"))
            #expect(
                try await StowageExecutable.run(["secrets", "get", "api.example.com", "ada"] + base).standardOutput
                    == "hunter2\n"
            )
            #expect(
                try await StowageExecutable.run(["secrets", "remove", "api.example.com", "ada"] + base).standardOutput
                    == "removed\n"
            )
            #expect(try await StowageExecutable.run(["secrets", "get", "api.example.com", "ada"] + base).status == 2)
        }
    }
}
