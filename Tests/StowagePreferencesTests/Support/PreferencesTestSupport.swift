import Foundation
import StowageCore
import StowagePreferences

/// A fresh container root for one test, removed afterwards.
final class PreferencesTestDirectory: Sendable {
    let url: URL
    let container: Container

    init(_ name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appending(path: "stowage-prefs-\(safe)-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        container = Container(root: url, identifier: "org.stowage.tests")
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A preferences file path directly in the directory.
    func file(_ name: String = "suite.stowprefs") -> URL { url.appending(path: name) }
}

/// The worker executable built beside the tests (see Tests/StowagePreferencesWorker).
enum PreferencesWorker {
    static var url: URL {
        let candidates = [
            Bundle.main.bundleURL.appending(path: "StowagePreferencesWorker"),
            Bundle.main.bundleURL.deletingLastPathComponent().appending(path: "StowagePreferencesWorker"),
            URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appending(path: ".build/debug/StowagePreferencesWorker"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Starts `write FILE PREFIX COUNT KEYS THRESHOLD`; returns the process and its output.
    static func startWriting(
        file: URL,
        prefix: String,
        count: Int,
        keys: Int,
        compactionThreshold: Int = 256 * 1024
    ) throws -> (Process, FileHandle) {
        let process = Process()
        process.executableURL = url
        process.arguments = ["write", file.path, prefix, "\(count)", "\(keys)", "\(compactionThreshold)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// The value the worker's write number `index` stores (the worker's `workerValue`).
    static func value(_ index: Int) -> String {
        "v\(index)-" + String(repeating: "x", count: index % 300)
    }
}

struct PreferencesTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
