import Foundation
import StowageHTTPTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `stowage proxy` as a shell user runs it: a real process, a real origin, SIGTERM to stop.
@Suite struct ProxyCommandTests {
    @Test("stowage proxy serves through its cache and stops gracefully on SIGTERM (exit 0)")
    func servesAndStopsOnSIGTERM() async throws {
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }
        let cacheDirectory = FileManager.default.temporaryDirectory.appending(
            path: "stowage-proxy-cli-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: cacheDirectory) }
        let process = Process()
        process.executableURL = StowageExecutable.url
        process.arguments = [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--cache-dir", cacheDirectory.path,
            "--memory-capacity", "8MB", "--disk-capacity", "100MB",
        ]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let handle = output.fileHandleForReading
        let line = await Task.detached { () -> String in
            var bytes: [UInt8] = []
            while !bytes.contains(UInt8(ascii: "\n")) {
                let data = handle.availableData
                if data.isEmpty { break }
                bytes += data
            }
            return String(decoding: bytes, as: UTF8.self)
        }.value
        let port = try #require(
            line.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        )
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/doc"))
        for _ in 0..<2 {
            let (data, response) = try await URLSession.shared.data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "v1")
            #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Status") != nil)
        }
        #expect(origin.requestCount == 1)
        kill(process.processIdentifier, SIGTERM)
        let status = await Task.detached { () -> Int32 in
            process.waitUntilExit()
            return process.terminationStatus
        }.value
        #expect(status == 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("stowage proxy stopped"))
        await origin.stop()
    }

    @Test("stowage proxy rejects a bad upstream with a message and exit 64")
    func badUpstream() throws {
        let outcome = try StowageExecutable.run(["proxy", "--upstream", "ftp://example.com"])
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("must use http or https"))
    }
}
