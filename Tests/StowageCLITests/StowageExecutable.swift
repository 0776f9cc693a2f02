import Foundation
import StowageTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `stowage` executable, as a shell user would.
///
/// The child runs while the caller awaits: the wait happens on a thread of its own, never on one
/// of the few cooperative threads the other tests in the process share.
///
/// Under `swift test` the executable sits beside the test bundle in the build directory
/// (`Bundle.main.bundleURL`, checked with Swift 6.3.1); `.build/debug` relative to this file
/// is the fallback for runners that put the bundle elsewhere.
enum StowageExecutable {
    struct Outcome: Sendable {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    static var url: URL {
        let candidates = [
            Bundle.main.bundleURL.appending(path: "stowage"),
            Bundle.main.bundleURL.deletingLastPathComponent().appending(path: "stowage"),
            URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appending(path: ".build/debug/stowage"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Runs `stowage ARGUMENTS`, optionally through a wrapper command (e.g. `setpriv …`).
    static func run(
        _ arguments: [String],
        environment: [String: String]? = nil,
        wrapper: [String] = []
    ) async throws -> Outcome {
        try await runProcess(wrapper + [url.path] + arguments, environment: environment)
    }

    /// Runs any command and collects its output.
    static func runProcess(_ command: [String], environment: [String: String]? = nil) async throws -> Outcome {
        try await onOwnThread { try runAndWait(command, environment: environment) }
    }

    private static func runAndWait(_ command: [String], environment: [String: String]?) throws -> Outcome {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = command
        if let environment { process.environment = environment }
        let output = childPipe()
        let error = childPipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Read both pipes concurrently so a chatty child cannot fill one and block.
        let errorData = ErrorCollector(error.fileHandleForReading)
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let exit = process.waitForExitReliably()
        return Outcome(
            status: exit.status,
            standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData.wait(), as: UTF8.self)
        )
    }

    /// `du -s -B1 PATH` through an optional wrapper.
    static func du(_ path: String, wrapper: [String] = []) async throws -> Int64 {
        let outcome = try await runProcess(wrapper + ["du", "-s", "-B1", path])
        guard let bytes = outcome.standardOutput.split(separator: "\t").first.flatMap({ Int64($0) }) else {
            throw TestFailure("du printed no size: \(outcome.standardOutput) \(outcome.standardError)")
        }
        return bytes
    }
}

/// Reads a pipe to its end on a background thread.
final class ErrorCollector: @unchecked Sendable {
    // Invariant: `data` is written once by the reader thread before `done` is signalled and
    // read only after `wait()` has seen the signal.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
