/// The rule for every path that comes from outside — a manifest, a registry, a command-line
/// option, an API argument — before it reaches a system call.
///
/// System calls take C strings, so a NUL byte inside a Swift string silently ends the path
/// there: `"Documents/..\0/x"` would reach the kernel as `"Documents/.."`, after every check on
/// the Swift string had passed. Control characters are legal in Linux file names but no
/// manifest, registry or option has a reason to carry them, and they garble logs and
/// terminals; they are refused too. An empty path would mean the working directory.
///
/// Checks that confine a path (``Container``'s locations, the cleaner's and purgeable
/// directories' container paths) run on text that passed this rule.
package enum PathInput {
    /// The longest path accepted, in bytes: Linux's `PATH_MAX`, including the terminating NUL.
    package static let maximumLength = 4095

    /// Throws unless `path` is a non-empty path without NUL or control characters and at most
    /// ``maximumLength`` bytes long.
    ///
    /// - Parameters:
    ///   - path: The path as it arrived.
    ///   - subject: What the path is, for the message: `"task 2 (Path)"`, `"--root"`.
    /// - Throws: ``StowageError`` `.invalidArgument`, whose message names the offending byte and
    ///   its position and shows the path with control characters escaped and cut to a readable
    ///   length.
    package static func check(_ path: String, subject: String) throws {
        let bytes = path.utf8
        guard !bytes.isEmpty else {
            throw StowageError.invalidArgument(
                "\(subject): the path is empty; give a path (an empty one would mean the working directory)"
            )
        }
        if let offset = bytes.firstIndex(where: isControl).map({ bytes.distance(from: bytes.startIndex, to: $0) }) {
            let byte = bytes[bytes.index(bytes.startIndex, offsetBy: offset)]
            let what = byte == 0 ? "a NUL byte" : "the control character \(escaped(byte))"
            throw StowageError.invalidArgument(
                "\(subject): the path \(quoted(path)) contains \(what) at byte \(offset); a path must not contain "
                    + "NUL or control characters (system calls would cut or misread it) — fix the path where it "
                    + "was written",
                path: String(quoted(path).dropFirst().dropLast())
            )
        }
        guard bytes.count <= maximumLength else {
            throw StowageError.invalidArgument(
                "\(subject): the path \(quoted(path)) is \(bytes.count) bytes long; paths are limited to "
                    + "\(maximumLength) bytes"
            )
        }
    }

    /// `text` in single quotes for a message: control characters escaped (`\0`, `\n`,
    /// `\x1b`) and anything past `limit` characters cut, with the full length given.
    package static func quoted(_ text: String, limit: Int = 160) -> String {
        let (shown, isCut) = escape(text, limit: limit)
        return isCut ? "'\(shown)…' (\(text.utf8.count) bytes)" : "'\(shown)'"
    }

    /// `text` with control characters escaped and anything past `limit` characters cut: for
    /// text from outside (a parser's detail, a value) that goes into a message unquoted.
    package static func escaped(_ text: String, limit: Int = 1_024) -> String {
        let (shown, isCut) = escape(text, limit: limit)
        return isCut ? "\(shown)… (\(text.utf8.count) bytes)" : shown
    }

    private static func escape(_ text: String, limit: Int) -> (String, isCut: Bool) {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { return (result, true) }
            if scalar.value < 0x20 || scalar.value == 0x7F {
                result += escaped(UInt8(scalar.value))
            } else {
                result.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return (result, false)
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F
    }

    private static func escaped(_ byte: UInt8) -> String {
        switch byte {
        case 0: "\\0"
        case 0x09: "\\t"
        case 0x0A: "\\n"
        case 0x0D: "\\r"
        default: "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
        }
    }
}
