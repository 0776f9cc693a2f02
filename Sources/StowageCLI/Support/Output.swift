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

    /// Writes a line to standard error, prefixed with the tool's name. Control characters in
    /// the message (a file name may hold a newline or an escape sequence) are shown escaped, so
    /// a name cannot forge another line.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("stowage: \(visible(shortened(message)))\n".utf8))
    }

    /// `text` with control characters (C0, DEL, C1) written as `\n`, `\t`, `\r` or `\u{XX}`,
    /// as du quotes the names it prints: what a name holds cannot start a line or drive the
    /// terminal. A backslash is written `\\` (as `ls -b` does), so that the escapes stay
    /// unambiguous: a name holding the two characters `\n` is not shown as one holding a newline.
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || $0 == "\\" }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where isControl(scalar): result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
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

    /// Adds a row; control characters in its cells are shown escaped (``Output/visible(_:)``), so
    /// a file name cannot add rows of its own.
    mutating func append(_ row: [String]) { rows.append(row.map(Output.visible)) }

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
