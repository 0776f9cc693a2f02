import Foundation

/// The `StowageTestWorker` executable built beside the tests: the one child process every test
/// target runs when it needs another process (see Tests/StowageTestWorker/main.swift).
public enum TestWorker {
    /// Where the build put the worker: beside the test bundle, or in `.build/debug`.
    public static var url: URL {
        let candidates = [
            Bundle.main.bundleURL.appending(path: "StowageTestWorker"),
            Bundle.main.bundleURL.deletingLastPathComponent().appending(path: "StowageTestWorker"),
            URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appending(path: ".build/debug/StowageTestWorker"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// A process, not yet started, that runs `StowageTestWorker subcommand arguments…`.
    public static func process(_ subcommand: String, _ arguments: [String]) -> ChildProcess {
        let process = ChildProcess()
        process.executableURL = url
        process.arguments = [subcommand] + arguments
        return process
    }
}
