/// The rule for names that become one path component: a container identifier, a preferences
/// suite, a user's database directory. Only ASCII letters, digits, `.`, `-` and `_` (plus any
/// `extra` bytes), never `.` or `..`, so such a name can neither leave its directory nor mean
/// different files on different systems.
package enum PlainName {
    /// Whether `name` follows the rule, is 1 to `maximumLength` bytes long, and starts with `.`
    /// only when `allowsLeadingDot`.
    package static func isValid(
        _ name: String,
        maximumLength: Int,
        extra: Set<UInt8> = [],
        allowsLeadingDot: Bool
    ) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength, name != ".", name != ".." else { return false }
        if !allowsLeadingDot && bytes.first == UInt8(ascii: ".") { return false }
        return bytes.allSatisfy { byte in
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || extra.contains(byte)
        }
    }
}
