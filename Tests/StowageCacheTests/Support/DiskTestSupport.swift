import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization

extension TemporaryDirectory {
    /// Relative names of the value files under `cache/data`.
    func dataFiles(cache: String = "cache") -> Set<String> {
        let data = url.appending(path: "\(cache)/data")
        var names = Set<String>()
        for subdirectory in (try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? [] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: data.appending(path: subdirectory).path))
                ?? []
            {
                names.insert(subdirectory + "/" + name)
            }
        }
        return names
    }
}

/// The worker executable built beside the tests (see Tests/StowageCacheWorker).
enum CacheWorker {
    static var url: URL {
        let candidates = [
            Bundle.main.bundleURL.appending(path: "StowageCacheWorker"),
            Bundle.main.bundleURL.deletingLastPathComponent().appending(path: "StowageCacheWorker"),
            URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appending(path: ".build/debug/StowageCacheWorker"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    static func start(_ arguments: [String]) throws -> (Process, FileHandle) {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        let output = childPipe()
        process.standardOutput = output
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// Runs the worker to the end and returns its last output line; the wait happens on a thread
    /// of its own, not on a cooperative thread.
    static func run(_ arguments: [String]) async throws -> String {
        let (process, output) = try start(arguments)
        let data = try await waitForExit(process, readingToEnd: output)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        guard process.terminationStatus == 0, let last = lines.last else {
            throw TestFailure("worker \(arguments) exited \(process.terminationStatus)")
        }
        return String(last)
    }
}
