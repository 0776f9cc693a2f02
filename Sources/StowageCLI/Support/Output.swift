import ArgumentParser
import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How commands print and fail, in one place so every command behaves alike.
enum Output {
    /// Exit status when the command finished but some entries could not be read or removed.
    static let partialFailure = ExitCode(1)
    /// Exit status when the operation failed.
    static let failure = ExitCode(2)

    /// Prints `value` as one JSON document on standard output.
    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // A NaN or infinity stored by a library caller must not make the whole listing fail.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf",
            negativeInfinity: "-inf",
            nan: "nan"
        )
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// Writes a line to standard error, prefixed with the tool's name.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("stowage: \(shortened(message))\n".utf8))
    }

    /// The longest message written whole; a message quoting a huge path or value is cut.
    static let maximumMessageLength = 2_000

    /// `message`, cut to ``maximumMessageLength`` characters with the full length given.
    static func shortened(_ message: String) -> String {
        guard message.count > maximumMessageLength else { return message }
        return message.prefix(maximumMessageLength) + "… (message cut, \(message.utf8.count) bytes in all)"
    }

    /// Runs a command body, turning library errors into a message on standard error and exit 2.
    static func run(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as StowageError {
            warn(error.message)
            throw failure
        }
    }
}

/// A plain text table: left-aligned columns, two spaces apart.
struct TextTable {
    private var rows: [[String]]

    init(header: [String]) { rows = [header] }

    mutating func append(_ row: [String]) { rows.append(row) }

    var rendered: String {
        let widths = rows.reduce(into: [Int](repeating: 0, count: rows[0].count)) { widths, row in
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
