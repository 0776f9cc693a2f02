import Foundation
import StowageTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A `stowage proxy` child process: started with its options, it either listens (its ports read
/// from the lines it prints) or exits at once on a usage error.
///
/// Bounded: a proxy that neither prints its port nor exits within `deadline` is killed, so a
/// test of an option that should have been refused cannot hang.
final class ProxyProcess: Sendable {
    /// How the start went.
    enum Start {
        /// It listens; stop it with ``stop()``.
        case listening(ProxyProcess)
        /// It exited before listening (a refused option).
        case exited(StowageExecutable.Outcome)
    }

    let process: ChildProcess
    /// The main listener's port.
    let port: Int
    /// The admin listener's port, with `--admin-listen`.
    let adminPort: Int?

    private init(process: ChildProcess, port: Int, adminPort: Int?) {
        self.process = process
        self.port = port
        self.adminPort = adminPort
    }

    /// Runs `stowage proxy arguments…` (add `--listen 127.0.0.1:0`) until it prints its port
    /// (and the admin port when `expectsAdmin`) or exits.
    ///
    /// A proxy that does neither is killed when the task is cancelled: give the test a
    /// `.timeLimit`, which turns such a hang into a failure.
    static func start(
        _ arguments: [String],
        expectsAdmin: Bool = false,
        environment: [String: String]? = nil
    ) async throws -> Start {
        let process = ChildProcess()
        process.executableURL = StowageExecutable.url
        process.arguments = ["proxy"] + arguments
        if let environment { process.environment = environment }
        let output = childPipe()
        let errors = childPipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outputHandle = output.fileHandleForReading
        let errorHandle = errors.fileHandleForReading
        let lines = try await withTaskCancellationHandler {
            try await onOwnThread { () -> [String] in
                var text = ""
                while true {
                    let lines = text.split(separator: "\n").map(String.init)
                    let listening = lines.contains { $0.hasPrefix("listening on") }
                    let admin = lines.contains { $0.hasPrefix("admin listening on") }
                    if listening && (admin || !expectsAdmin) { return lines }
                    let data = outputHandle.availableData
                    if data.isEmpty { return lines }
                    text += String(decoding: data, as: UTF8.self)
                }
            }
        } onCancel: {
            kill(process.processIdentifier, SIGKILL)
        }
        func port(after prefix: String) -> Int? {
            lines.first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: ":").last }.flatMap { Int($0) }
        }
        if let mainPort = port(after: "listening on") {
            let adminPort = port(after: "admin listening on")
            // Standard error is drained in the background so a chatty proxy cannot block on it.
            _ = ErrorCollector(errorHandle)
            return .listening(ProxyProcess(process: process, port: mainPort, adminPort: adminPort))
        }
        let errorText = try await onOwnThread { () -> String in
            let data = errorHandle.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        return .exited(
            StowageExecutable.Outcome(
                status: process.terminationStatus,
                standardOutput: lines.joined(separator: "\n"),
                standardError: errorText
            )
        )
    }

    /// Sends SIGTERM and returns the exit status.
    @discardableResult
    func stop() async throws -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        let process = process
        return try await onOwnThread { () -> Int32 in
            process.waitForExitReliably().status
        }
    }
}
