import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the system's temporary directory, removed when the test is done.
final class TemporaryDirectory: Sendable {
    let url: URL
    var path: String { url.path(percentEncoded: false).trimmingSuffix("/") }

    init(_ name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appending(path: "stowage-core-\(safe)-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `bytes` bytes to `relative`, creating parent directories.
    @discardableResult
    func write(_ relative: String, bytes: Int = 1, byte: UInt8 = 0x61) throws -> URL {
        let file = url.appending(path: relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: byte, count: bytes).write(to: file)
        return file
    }

    func makeDirectory(_ relative: String) throws {
        try FileManager.default.createDirectory(at: url.appending(path: relative), withIntermediateDirectories: true)
    }

    func symlink(_ relative: String, to destination: String) throws {
        try FileManager.default.createSymbolicLink(
            atPath: url.appending(path: relative).path,
            withDestinationPath: destination
        )
    }

    func exists(_ relative: String) -> Bool {
        var status = stat()
        return lstat(url.appending(path: relative).path, &status) == 0
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) && count > 1 ? String(dropLast(suffix.count)) : self
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command and returns its standard output; throws when it fails.
func runCommand(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/env")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestFailure("\(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self)
}

/// `du -s -B1 PATH` and `du -s --apparent-size -B1` are the references for allocated bytes.
func duAllocatedBytes(_ path: String, extraArguments: [String] = []) throws -> Int64 {
    let text = try runCommand(["du", "-s", "-B1"] + extraArguments + [path])
    guard let value = text.split(separator: "\t").first.flatMap({ Int64($0) }) else {
        throw TestFailure("du printed no size: \(text)")
    }
    return value
}

/// Reads an extended attribute with the `getfattr`-independent Python reference.
func pythonGetXattr(_ path: String, _ name: String) throws -> String? {
    let script = """
        import os, sys
        try:
            print(os.getxattr(sys.argv[1], sys.argv[2], follow_symlinks=False).decode())
        except OSError:
            print("<none>")
        """
    let value = try runCommand(["python3", "-c", script, path, name]).trimmingCharacters(in: .newlines)
    return value == "<none>" ? nil : value
}
