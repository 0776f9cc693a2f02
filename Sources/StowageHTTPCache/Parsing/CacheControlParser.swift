/// The byte-level parser behind ``CacheControl``.
enum CacheControlParser {
    /// tchar (RFC 9110 §5.6.2).
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// Appends the directives of one field value; malformed elements are skipped.
    static func parse(_ bytes: [UInt8], into directives: inout [CacheControl.Directive]) {
        var i = 0
        let n = bytes.count
        while i < n {
            // Empty list elements and OWS are allowed (RFC 9110 §5.6.1.2).
            while i < n, isWhitespace(bytes[i]) || bytes[i] == UInt8(ascii: ",") { i += 1 }
            guard i < n else { return }
            let nameStart = i
            while i < n, isTokenCharacter(bytes[i]) { i += 1 }
            let name = bytes[nameStart..<i]
            var argument: String?
            var valid = !name.isEmpty
            var j = i
            while j < n, isWhitespace(bytes[j]) { j += 1 }
            if valid, j < n, bytes[j] == UInt8(ascii: "=") {
                j += 1
                while j < n, isWhitespace(bytes[j]) { j += 1 }
                if j < n, bytes[j] == UInt8(ascii: "\"") {
                    j += 1
                    var value: [UInt8] = []
                    var closed = false
                    while j < n {
                        let byte = bytes[j]
                        if byte == UInt8(ascii: "\"") {
                            closed = true
                            j += 1
                            break
                        }
                        if byte == UInt8(ascii: "\\"), j + 1 < n {
                            value.append(bytes[j + 1])
                            j += 2
                            continue
                        }
                        value.append(byte)
                        j += 1
                    }
                    valid = closed
                    argument = String(decoding: value, as: UTF8.self)
                } else {
                    let valueStart = j
                    while j < n, isTokenCharacter(bytes[j]) { j += 1 }
                    argument = String(decoding: bytes[valueStart..<j], as: UTF8.self)
                }
                i = j
            } else {
                i = j
            }
            while i < n, isWhitespace(bytes[i]) { i += 1 }
            if i < n, bytes[i] != UInt8(ascii: ",") {
                // Junk after the directive: skip the element up to the next comma outside quotes.
                valid = false
                var inQuotes = false
                while i < n {
                    let byte = bytes[i]
                    if inQuotes, byte == UInt8(ascii: "\\") {
                        i += 2
                        continue
                    }
                    if byte == UInt8(ascii: "\"") { inQuotes.toggle() }
                    if byte == UInt8(ascii: ","), !inQuotes { break }
                    i += 1
                }
            }
            if valid {
                directives.append(CacheControl.Directive(String(decoding: name, as: UTF8.self), argument))
            }
        }
    }
}
