import Foundation
import StowageCore
import StowageProcessSupport

/// Runs external tools for baselines and fixtures through `ChildProcess`, the tests' own child
/// processes (Foundation's `Process.run()` can crash on Linux: see ChildProcess).
enum Subprocess {
    /// Runs `arguments` through `/usr/bin/env` and returns its standard output; throws on failure.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchFailure("\(arguments.joined(separator: " ")) exited with status \(process.terminationStatus)")
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Runs `arguments` and returns the wall-clock seconds it took, process start included.
    static func time(_ arguments: [String]) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try run(arguments)
        return seconds(clock.now - start)
    }

    /// `du -s -B1 PATH`.
    static func du(_ url: URL) throws -> Int64 {
        guard
            let bytes = try run(["du", "-s", "-B1", url.fileSystemPath]).split(separator: "\t").first.flatMap({
                Int64($0)
            })
        else { throw BenchFailure("du printed no size for \(url.fileSystemPath)") }
        return bytes
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
