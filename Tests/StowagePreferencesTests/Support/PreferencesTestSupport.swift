import Foundation
import StowageCore
import StowagePreferences
import StowageTestSupport

/// A fresh container root for one test, removed afterwards.
final class PreferencesTestDirectory: Sendable {
    private let directory: TemporaryDirectory
    let container: Container
    var url: URL { directory.url }

    init(_ name: String = #function) throws {
        directory = try TemporaryDirectory(name)
        container = Container(root: directory.url, identifier: "org.stowage.tests")
    }

    /// A preferences file path directly in the directory.
    func file(_ name: String = "suite.stowprefs") -> URL { url.appending(path: name) }
}

/// `StowageTestWorker preferences …` (see Tests/StowageTestWorker/PreferencesWorkerCommand.swift).
enum PreferencesWorker {

    /// Starts `write FILE PREFIX COUNT KEYS THRESHOLD`; returns the process and its output.
    static func startWriting(
        file: URL,
        prefix: String,
        count: Int,
        keys: Int,
        compactionThreshold: Int = 256 * 1024
    ) throws -> (ChildProcess, FileHandle) {
        let process = TestWorker.process(
            "preferences",
            ["write", file.path, prefix, "\(count)", "\(keys)", "\(compactionThreshold)"]
        )
        let output = childPipe()
        process.standardOutput = output
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// The value the worker's write number `index` stores (the worker's `workerValue`).
    static func value(_ index: Int) -> String {
        "v\(index)-" + String(repeating: "x", count: index % 300)
    }
}
