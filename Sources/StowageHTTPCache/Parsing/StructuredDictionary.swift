/// Checks a field value against the Dictionary syntax of Structured Field Values (RFC 8941
/// §3.2, parsed as §4.2.2 says): what RFC 9213 requires of a targeted cache-control field
/// before a cache may follow it.
///
/// Only validity is decided here; the directives themselves are read by ``CacheControl``, whose
/// grammar accepts every valid dictionary. Rejected, for example: an upper-case key
/// (`Max-Age=60`), a value that is no bare item (`max-age=60s`), an unterminated string, a
/// trailing comma, an empty value.
enum StructuredDictionary {
    /// Whether `value` (field lines already joined with ", ") is a valid, non-empty dictionary.
    static func isValid(_ value: String) -> Bool {
        var parser = Parser(bytes: Array(value.utf8))
        return parser.parseDictionary()
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skip(_ set: (UInt8) -> Bool) {
            while let byte = current, set(byte) { index += 1 }
        }

        static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 }
        static func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        static func isLowerAlpha(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) }
        static func isAlpha(_ byte: UInt8) -> Bool { isLowerAlpha(byte) || (0x41...0x5A).contains(byte) }
        static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        /// RFC 9110 `tchar`.
        static func isTokenCharacter(_ byte: UInt8) -> Bool {
            isAlpha(byte) || isDigit(byte) || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }

        /// §4.2.2, with the leading and trailing spaces §4.2 discards.
        mutating func parseDictionary() -> Bool {
            skip(Self.isSpace)
            guard current != nil else { return false }  // empty: not a usable targeted field
            while true {
                guard parseKey() else { return false }
                if current == UInt8(ascii: "=") {
                    index += 1
                    guard parseItemOrInnerList() else { return false }
                } else {
                    guard parseParameters() else { return false }
                }
                skip(Self.isOWS)
                guard let byte = current else { return true }
                guard byte == UInt8(ascii: ",") else { return false }
                index += 1
                skip(Self.isOWS)
                guard current != nil else { return false }  // a trailing comma
            }
        }

        /// §4.2.3.3: `(lcalpha / "*") *(lcalpha / DIGIT / "_" / "-" / "." / "*")`.
        mutating func parseKey() -> Bool {
            guard let first = current, Self.isLowerAlpha(first) || first == UInt8(ascii: "*") else { return false }
            index += 1
            skip { Self.isLowerAlpha($0) || Self.isDigit($0) || Array("_-.*".utf8).contains($0) }
            return true
        }

        mutating func parseItemOrInnerList() -> Bool {
            if current == UInt8(ascii: "(") { return parseInnerList() }
            return parseBareItem() && parseParameters()
        }

        /// §4.2.1.2.
        mutating func parseInnerList() -> Bool {
            index += 1
            while true {
                skip(Self.isSpace)
                guard let byte = current else { return false }
                if byte == UInt8(ascii: ")") {
                    index += 1
                    return parseParameters()
                }
                guard parseBareItem(), parseParameters() else { return false }
                guard let next = current, next == 0x20 || next == UInt8(ascii: ")") else { return false }
            }
        }

        /// §4.2.3.2.
        mutating func parseParameters() -> Bool {
            while current == UInt8(ascii: ";") {
                index += 1
                skip(Self.isSpace)
                guard parseKey() else { return false }
                if current == UInt8(ascii: "=") {
                    index += 1
                    guard parseBareItem() else { return false }
                }
            }
            return true
        }

        /// §4.2.3.1: integer or decimal, string, token, byte sequence, boolean.
        mutating func parseBareItem() -> Bool {
            guard let byte = current else { return false }
            if byte == UInt8(ascii: "-") || Self.isDigit(byte) { return parseNumber() }
            if byte == UInt8(ascii: "\"") { return parseString() }
            if byte == UInt8(ascii: "*") || Self.isAlpha(byte) {
                index += 1
                skip { Self.isTokenCharacter($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") }
                return true
            }
            if byte == UInt8(ascii: ":") { return parseByteSequence() }
            if byte == UInt8(ascii: "?") {
                index += 1
                guard let value = current, value == UInt8(ascii: "0") || value == UInt8(ascii: "1") else {
                    return false
                }
                index += 1
                return true
            }
            return false
        }

        /// §4.2.4: at most 15 integer digits; a decimal has at most 12 before and 1 to 3 after the dot.
        mutating func parseNumber() -> Bool {
            if current == UInt8(ascii: "-") { index += 1 }
            let start = index
            skip(Self.isDigit)
            let integerDigits = index - start
            guard integerDigits > 0 else { return false }
            guard current == UInt8(ascii: ".") else { return integerDigits <= 15 }
            index += 1
            let fractionStart = index
            skip(Self.isDigit)
            let fractionDigits = index - fractionStart
            return integerDigits <= 12 && (1...3).contains(fractionDigits)
        }

        /// §4.2.5: printable ASCII, with `\"` and `\\` the only escapes.
        mutating func parseString() -> Bool {
            index += 1
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return true
                case UInt8(ascii: "\\"):
                    guard let escaped = current, escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else {
                        return false
                    }
                    index += 1
                case 0x20...0x7E: continue
                default: return false
                }
            }
            return false  // unterminated
        }

        /// §4.2.7: base64 between colons.
        mutating func parseByteSequence() -> Bool {
            index += 1
            skip { Self.isAlpha($0) || Self.isDigit($0) || Array("+/=".utf8).contains($0) }
            guard current == UInt8(ascii: ":") else { return false }
            index += 1
            return true
        }
    }
}
