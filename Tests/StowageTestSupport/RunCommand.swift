import Foundation

/// Runs `arguments` (the first is looked up on `PATH`) and returns its standard output (standard
/// error is discarded); throws ``TestFailure`` when it exits with another status than 0.
public func runCommand(_ arguments: [String]) throws -> String {
    let process = ChildProcess()
    process.executableURL = URL(filePath: "/usr/bin/env")
    process.arguments = arguments
    let output = childPipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let exit = process.waitForExitReliably()
    guard exit == ChildExit(status: 0, wasSignaled: false) else {
        throw TestFailure("\(arguments.joined(separator: " ")) exited \(exit.status)")
    }
    return String(decoding: data, as: UTF8.self)
}
