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
        (port, process) = try await Self.start(in: directory)
    }

    /// Starts redis-server on a random port below the kernel's ephemeral range (32768 and up,
    /// where an outgoing connection may hold the port) and waits until it answers; a server that
    /// exits at once (the port was taken) is tried again on another port, up to five times.
    private static func start(in directory: URL) async throws -> (Int, Process) {
        var tried: [Int] = []
        for _ in 0..<5 {
            let port = Int.random(in: 23_000...29_999)
            tried.append(port)
            let process = Process()
            process.executableURL = tool("redis-server")
            process.arguments = [
                "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--save", "",
                "--appendonly", "no", "--logfile", directory.appending(path: "redis.log").path,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<500 {
                let reply = try? run("redis-cli", ["-p", String(port), "PING"])
                if reply?.contains("PONG") == true { return (port, process) }
                if !process.isRunning { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        throw BenchError("redis-server did not start on ports \(tried); see \(directory.path)/redis.log")
    }

    var url: String { "redis://127.0.0.1:\(port)" }

    func stop() {
        _ = try? run("redis-cli", ["-p", String(port), "SHUTDOWN", "NOSAVE"])
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a Redis tool and returns its standard output.
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        try Self.run(tool, arguments)
    }

    /// Runs a Redis tool and returns its standard output.
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
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
        guard rates["SET"] != nil, rates["GET"] != nil else {
            throw BenchError("unexpected redis-benchmark output: \(csv)")
        }
        return rates
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
