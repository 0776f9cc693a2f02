/// Parses a field value as a Dictionary of Structured Field Values (RFC 8941 §3.2, parsed as
/// §4.2.2 says): the syntax RFC 9213 §2.1 gives a targeted cache-control field.
///
/// Rejected as a whole, for example: an upper-case key (`Max-Age=60`), a value that is no bare
/// item (`max-age=60s`), an unterminated string, a trailing comma, an empty value. What the
/// directives' arguments must be (an Integer for `max-age`, …) is RFC 9213's business, checked in
/// ``CacheControl/init(targeted:)``.
enum StructuredDictionary {
    /// A bare item (RFC 8941 §3.3) with the value a cache directive can use.
    enum Item: Hashable, Sendable {
        /// §3.3.1, at most 15 digits.
        case integer(Int)
        /// §3.3.2; the value is never a directive argument, so it is not kept.
        case decimal
        /// §3.3.3, escapes removed.
        case string(String)
        /// §3.3.4.
        case token(String)
        /// §3.3.5; the bytes are never a directive argument, so they are not kept.
        case byteSequence
        /// §3.3.6.
        case boolean(Bool)
    }

    /// A member's value (RFC 8941 §3.2); parameters (§3.1.2) are dropped.
    enum Value: Hashable, Sendable {
        case item(Item)
        case innerList([Item])
    }

    /// One member: its key and value.
    struct Member: Hashable, Sendable {
        var key: String
        var value: Value
    }

    /// The members of `value` (field lines already joined with ", ") in order, or `nil` when it
    /// is not a valid dictionary. A key given twice keeps its first place and its last value
    /// (§4.2.2: "overwrite its value"). An empty value parses to no members (§4.2: an empty
    /// dictionary), which a targeted field then treats as absent.
    static func parse(_ value: String) -> [Member]? {
        var parser = Parser(bytes: Array(value.utf8))
        return parser.parseDictionary()
    }

    /// Whether `value` is a valid, non-empty dictionary.
    static func isValid(_ value: String) -> Bool {
        guard let members = parse(value) else { return false }
        return !members.isEmpty
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
        mutating func parseDictionary() -> [Member]? {
            var members: [Member] = []
            skip(Self.isSpace)
            guard current != nil else { return members }
            while true {
                guard let key = parseKey() else { return nil }
                let value: Value
                if current == UInt8(ascii: "=") {
                    index += 1
                    guard let parsed = parseItemOrInnerList() else { return nil }
                    value = parsed
                } else {
                    guard parseParameters() else { return nil }
                    value = .item(.boolean(true))
                }
                if let existing = members.firstIndex(where: { $0.key == key }) {
                    members[existing].value = value
                } else {
                    members.append(Member(key: key, value: value))
                }
                skip(Self.isOWS)
                guard let byte = current else { return members }
                guard byte == UInt8(ascii: ",") else { return nil }
                index += 1
                skip(Self.isOWS)
                guard current != nil else { return nil }  // a trailing comma
            }
        }

        /// §4.2.3.3: `(lcalpha / "*") *(lcalpha / DIGIT / "_" / "-" / "." / "*")`.
        mutating func parseKey() -> String? {
            guard let first = current, Self.isLowerAlpha(first) || first == UInt8(ascii: "*") else { return nil }
            let start = index
            index += 1
            skip { Self.isLowerAlpha($0) || Self.isDigit($0) || Array("_-.*".utf8).contains($0) }
            return text(from: start)
        }

        func text(from start: Int) -> String { String(decoding: bytes[start..<index], as: UTF8.self) }

        /// §4.2.1.1: an item and its parameters, or an inner list.
        mutating func parseItemOrInnerList() -> Value? {
            if current == UInt8(ascii: "(") { return parseInnerList().map(Value.innerList) }
            guard let item = parseBareItem(), parseParameters() else { return nil }
            return .item(item)
        }

        /// §4.2.1.2.
        mutating func parseInnerList() -> [Item]? {
            index += 1
            var items: [Item] = []
            while true {
                skip(Self.isSpace)
                guard let byte = current else { return nil }
                if byte == UInt8(ascii: ")") {
                    index += 1
                    return parseParameters() ? items : nil
                }
                guard let item = parseBareItem(), parseParameters() else { return nil }
                items.append(item)
                guard let next = current, next == 0x20 || next == UInt8(ascii: ")") else { return nil }
            }
        }

        /// §4.2.3.2; the parameters are checked and dropped (RFC 9213 §2.1 ignores them).
        mutating func parseParameters() -> Bool {
            while current == UInt8(ascii: ";") {
                index += 1
                skip(Self.isSpace)
                guard parseKey() != nil else { return false }
                if current == UInt8(ascii: "=") {
                    index += 1
                    guard parseBareItem() != nil else { return false }
                }
            }
            return true
        }

        /// §4.2.3.1: integer or decimal, string, token, byte sequence, boolean.
        mutating func parseBareItem() -> Item? {
            guard let byte = current else { return nil }
            if byte == UInt8(ascii: "-") || Self.isDigit(byte) { return parseNumber() }
            if byte == UInt8(ascii: "\"") { return parseString() }
            if byte == UInt8(ascii: "*") || Self.isAlpha(byte) {
                let start = index
                index += 1
                skip { Self.isTokenCharacter($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") }
                return .token(text(from: start))
            }
            if byte == UInt8(ascii: ":") { return parseByteSequence() ? .byteSequence : nil }
            if byte == UInt8(ascii: "?") {
                index += 1
                guard let value = current, value == UInt8(ascii: "0") || value == UInt8(ascii: "1") else {
                    return nil
                }
                index += 1
                return .boolean(value == UInt8(ascii: "1"))
            }
            return nil
        }

        /// §4.2.4: at most 15 integer digits; a decimal has at most 12 before and 1 to 3 after the dot.
        mutating func parseNumber() -> Item? {
            let negative = current == UInt8(ascii: "-")
            if negative { index += 1 }
            let start = index
            skip(Self.isDigit)
            let integerDigits = index - start
            guard integerDigits > 0 else { return nil }
            guard current == UInt8(ascii: ".") else {
                guard integerDigits <= 15 else { return nil }
                let magnitude = bytes[start..<index].reduce(0) { $0 * 10 + Int($1 - 0x30) }
                return .integer(negative ? -magnitude : magnitude)
            }
            index += 1
            let fractionStart = index
            skip(Self.isDigit)
            let fractionDigits = index - fractionStart
            return integerDigits <= 12 && (1...3).contains(fractionDigits) ? .decimal : nil
        }

        /// §4.2.5: printable ASCII, with `\"` and `\\` the only escapes.
        mutating func parseString() -> Item? {
            index += 1
            var unescaped: [UInt8] = []
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return .string(String(decoding: unescaped, as: UTF8.self))
                case UInt8(ascii: "\\"):
                    guard let escaped = current, escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else {
                        return nil
                    }
                    unescaped.append(escaped)
                    index += 1
                case 0x20...0x7E: unescaped.append(byte)
                default: return nil
                }
            }
            return nil  // unterminated
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
