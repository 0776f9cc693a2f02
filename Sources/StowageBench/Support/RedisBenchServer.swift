import Foundation

/// A `redis-server` the bench starts on a free loopback port in a temporary directory, with
/// persistence off, and stops with `SHUTDOWN NOSAVE`.
final class RedisBenchServer: Sendable {
    let port: Int
    let directory: URL
    private let process: Process

    /// `redis-server`, `redis-cli` and `redis-benchmark` from `PATH`'s usual places, or `nil`.
    static func tool(_ name: String) -> URL? {
        ["/usr/bin", "/usr/local/bin", "/usr/sbin"].map { URL(filePath: $0).appending(path: name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static var isAvailable: Bool { ["redis-server", "redis-cli", "redis-benchmark"].allSatisfy { tool($0) != nil } }

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "stowage-bench-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = Int.random(in: 30_000...39_999)
        process = Process()
        process.executableURL = Self.tool("redis-server")
        process.arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--save", "",
            "--appendonly", "no", "--logfile", directory.appending(path: "redis.log").path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            if (try? run("redis-cli", ["-p", String(port), "PING"]))?.contains("PONG") == true { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError("redis-server did not start on port \(port); see \(directory.path)/redis.log")
    }

    var url: String { "redis://127.0.0.1:\(port)" }

    func stop() {
        _ = try? run("redis-cli", ["-p", String(port), "SHUTDOWN", "NOSAVE"])
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a Redis tool and returns its standard output.
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = Self.tool(tool)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// `redis-benchmark -t set,get -d SIZE -c CLIENTS -P PIPELINE -n REQUESTS --csv`: requests per
    /// second by test name (`SET`, `GET`).
    func benchmark(valueSize: Int, clients: Int, pipeline: Int, requests: Int) throws -> [String: Double] {
        let csv = try run(
            "redis-benchmark",
            [
                "-h", "127.0.0.1", "-p", String(port), "-t", "set,get", "-d", String(valueSize), "-c", String(clients),
                "-P", String(pipeline), "-n", String(requests), "--csv",
            ]
        )
        var rates: [String: Double] = [:]
        for line in csv.split(separator: "\n") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            if fields.count >= 2, let rate = Double(fields[1]) { rates[fields[0]] = rate }
        }
        guard rates["SET"] != nil, rates["GET"] != nil else { throw BenchError("unexpected redis-benchmark output: \(csv)") }
        return rates
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
