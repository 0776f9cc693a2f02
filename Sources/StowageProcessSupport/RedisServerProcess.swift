import Foundation
import Synchronization

/// A real `redis-server` on a free 127.0.0.1 port in its own temporary directory, for the tests
/// and the bench (its shared-tier scenarios).
///
/// ```swift
/// let server = try await RedisServerProcess.start()
/// defer { server.stop() }
/// let client = try RedisClient(url: server.url)
/// ```
///
/// Persistence is off (no RDB, no AOF): a restart starts empty, as after a crash of a cache.
public final class RedisServerProcess: Sendable {
    /// Whether `redis-server` is installed (`.ci/run` installs it from apt).
    public static let isAvailable = executable("redis-server") != nil && executable("redis-cli") != nil

    /// The loopback port the server listens on.
    public let port: Int
    /// The server's working directory (its configuration and files).
    public let directory: URL
    private let extraArguments: [String]
    private let process = Mutex<ChildProcess?>(nil)

    private init(port: Int, directory: URL, extraArguments: [String]) {
        self.port = port
        self.directory = directory
        self.extraArguments = extraArguments
    }

    /// Starts a server and waits until it answers `PING`.
    ///
    /// - Parameter extraArguments: More `--option value` pairs (e.g. `--requirepass s3cret`).
    public static func start(extraArguments: [String] = [], port: Int? = nil) async throws -> RedisServerProcess {
        var attempt = 0
        while true {
            attempt += 1
            let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-redis-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let server = RedisServerProcess(
                port: try port ?? freePort(),
                directory: directory,
                extraArguments: extraArguments
            )
            do {
                try await server.start()
                return server
            } catch {
                // A port this process chose may have been taken since it looked (another
                // program on the machine): try the next one.
                guard port == nil, attempt < 3 else { throw error }
                server.remove()
            }
        }
    }

    /// `redis://127.0.0.1:PORT`.
    public var url: String { "redis://127.0.0.1:\(port)" }

    /// (Re)starts the server on the same port and directory and waits until it answers.
    public func start() async throws {
        guard let executable = Self.executable("redis-server") else {
            throw ProcessFailure(
                "redis-server is not installed: install it (apt-get install redis-server) or skip the tests that need it"
            )
        }
        let process = ChildProcess()
        process.executableURL = executable
        process.arguments =
            [
                "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
                "--save", "", "--appendonly", "no", "--protected-mode", "no",
                "--logfile", directory.appending(path: "redis.log").path,
            ] + extraArguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process.withLock { $0 = process }
        try await waitUntilAnswering()
    }

    /// Stops the server (`SHUTDOWN NOSAVE`, SIGKILL if it is still running after 5 s) and waits
    /// for it to exit. Not SIGTERM: a child of the test process inherits its blocked signals, and
    /// redis-server then never sees the SIGTERM.
    public func stop() {
        guard
            let process = process.withLock({ state -> ChildProcess? in
                defer { state = nil }
                return state
            })
        else { return }
        _ = try? cli(["SHUTDOWN", "NOSAVE"])
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        _ = process.waitForExitReliably()
    }

    /// Stops the server process where it is (SIGSTOP), as a hung server: its connections stay
    /// open and nothing is answered. Call ``resume()`` in the test's cleanup.
    public func suspend() {
        if let pid = process.withLock({ $0?.processIdentifier }) { Foundation.kill(pid, SIGSTOP) }
    }

    /// Lets a ``suspend()``ed server run on (SIGCONT).
    public func resume() {
        if let pid = process.withLock({ $0?.processIdentifier }) { Foundation.kill(pid, SIGCONT) }
    }

    /// Kills the server (SIGKILL), as a crash or an OOM kill would.
    public func kill() {
        guard
            let process = process.withLock({ state -> ChildProcess? in
                defer { state = nil }
                return state
            })
        else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        _ = process.waitForExitReliably()
    }

    /// Stops the server and deletes its directory.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `redis-cli -p PORT arguments…` and returns its output.
    @discardableResult
    public func cli(_ arguments: [String]) throws -> String {
        var authentication: [String] = []
        if let index = extraArguments.firstIndex(of: "--requirepass"), index + 1 < extraArguments.count {
            authentication = ["-a", extraArguments[index + 1], "--no-auth-warning"]
        }
        return try Self.run("redis-cli", ["-p", String(port)] + authentication + arguments)
    }

    /// Polls with `redis-cli` from a dispatch thread, not Swift's cooperative pool: many suites
    /// start servers at once, and each poll spawns and waits for a process.
    private func waitUntilAnswering() async throws {
        let pid = process.withLock { $0?.processIdentifier } ?? -1
        let answered: Bool = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    // Our own server must answer, not whatever else listens on the port.
                    if let info = try? self.cli(["INFO", "server"]), info.contains("process_id:\(pid)\r") {
                        return continuation.resume(returning: true)
                    }
                    if self.process.withLock({ $0?.isRunning }) == false { break }
                    usleep(20_000)
                }
                continuation.resume(returning: false)
            }
        }
        guard answered else {
            let log = (try? String(contentsOf: directory.appending(path: "redis.log"), encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(5).joined(separator: "\n")
            throw ProcessFailure("redis-server on port \(port) did not answer within 30 s; its log ends:\n\(tail)")
        }
    }

    /// A port nobody listens on now (and whose cluster bus port, +10000, is free too).
    public static func freePort() throws -> Int { try freeLoopbackPort() }

    /// The installed tool called `name` (`redis-server`, `redis-cli`, `redis-benchmark`), or `nil`.
    public static func executable(_ name: String) -> URL? {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin"] {
            let url = URL(filePath: directory).appending(path: name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    /// Runs a tool and returns its standard output; throws when it exits non-zero.
    ///
    /// Output goes through a temporary file, not a pipe: tests run in parallel, and a
    /// redis-server spawned by another test while a pipe is open inherits its write end, so
    /// reading the pipe to its end would wait for that server to exit.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String]) throws -> String {
        guard let url = executable(tool) else { throw ProcessFailure("\(tool) is not installed") }
        let outputURL = FileManager.default.temporaryDirectory.appending(
            path: "stowage-redis-output-\(UUID().uuidString)"
        )
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else {
            throw ProcessFailure("cannot create \(outputURL.path)")
        }
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        let process = ChildProcess()
        process.executableURL = url
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let exit = process.waitForExitReliably()
        try output.close()
        let text = String(decoding: try Data(contentsOf: outputURL), as: UTF8.self)
        guard exit == ChildExit(status: 0, wasSignaled: false) else {
            throw ProcessFailure(
                "\(tool) \(arguments.joined(separator: " ")) exited \(exit.status): \(text)"
            )
        }
        return text
    }
}
