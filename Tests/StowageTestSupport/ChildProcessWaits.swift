import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads `output` to its end and waits for `process` to exit, on a thread of its own: a test that
/// runs a worker process does not hold one of the cooperative threads meanwhile.
///
/// - Returns: What the process wrote to `output`.
@discardableResult
public func waitForExit(_ process: ChildProcess, readingToEnd output: FileHandle) async throws -> Data {
    try await onOwnThread {
        let data = output.readDataToEndOfFile()
        _ = process.waitForExitReliably()
        return data
    }
}

/// Reads `output` until what was read contains `marker` (or the writer closes it), then at once
/// sends SIGKILL to `process` and waits for it to exit, all on a thread of its own: no hop back
/// to a busy cooperative thread lets the process run on between the marker and the kill.
///
/// - Returns: Everything read before the kill, as text.
public func kill(_ process: ChildProcess, once output: FileHandle, contains marker: String) async throws -> String {
    try await onOwnThread {
        var seen = ""
        while !seen.contains(marker) {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        _ = process.waitForExitReliably()
        return seen
    }
}
