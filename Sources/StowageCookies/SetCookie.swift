import Foundation
import StowageCore

/// A `Set-Cookie` field value parsed by RFC 6265 §5.2, before the store decides on it (§5.3).
struct SetCookie: Equatable {
    var name: String
    var value: String
    /// `Expires`, when it parsed (§5.2.1).
    var expires: Date?
    /// `Max-Age` in seconds, when it parsed (§5.2.2); may be ≤ 0.
    var maxAge: Int64?
    /// `Domain`, lowercased, leading dot removed (§5.2.3); `nil` when absent or empty.
    var domain: String?
    /// `Path` (§5.2.4); `nil` when absent or not starting with `/` (the default path applies).
    var path: String?
    var isSecure = false
    var isHTTPOnly = false
    var sameSite: Cookie.SameSite?

    /// Attribute values longer than this are ignored (RFC 6265bis §5.6 step 7: 1024 bytes).
    static let maximumAttributeValueSize = 1024

    /// Parses `string` by RFC 6265 §5.2; throws `StowageError` `.malformed` when the
    /// whole cookie is to be ignored. Unknown or malformed attributes are skipped.
    static func parse(_ string: String) throws -> SetCookie {
        // RFC 6265bis §5.6 step 2: a control character other than HTAB (NUL, CR, LF, DEL …)
        // makes the whole cookie ignored, so a smuggled header or a truncated value is never stored.
        if string.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw StowageError(
                code: .malformed,
                message:
                    "the Set-Cookie value contains a control character, so the whole cookie is ignored (RFC 6265bis §5.6)"
            )
        }
        // §5.2 steps 1–5.
        let pairEnd = string.firstIndex(of: ";") ?? string.endIndex
        let pair = string[..<pairEnd]
        guard let equals = pair.firstIndex(of: "=") else {
            throw StowageError(
                code: .malformed,
                message: "the Set-Cookie value has no name=value pair, so it is ignored (RFC 6265 §5.2)"
            )
        }
        let name = trimmed(pair[..<equals])
        guard !name.isEmpty else {
            throw StowageError(
                code: .malformed,
                message: "the Set-Cookie value has an empty cookie name, so it is ignored (RFC 6265 §5.2)"
            )
        }
        var cookie = SetCookie(name: String(name), value: String(trimmed(pair[pair.index(after: equals)...])))
        // §5.2 step 6 and following: the attributes, each `;`-separated, names case-insensitive.
        guard pairEnd < string.endIndex else { return cookie }
        for attribute in string[string.index(after: pairEnd)...].split(separator: ";", omittingEmptySubsequences: true)
        {
            let attributeEquals = attribute.firstIndex(of: "=")
            let attributeName = trimmed(attribute[..<(attributeEquals ?? attribute.endIndex)]).lowercased()
            let attributeValue = attributeEquals.map { trimmed(attribute[attribute.index(after: $0)...]) } ?? ""
            if attributeValue.utf8.count > maximumAttributeValueSize { continue }
            switch attributeName {
            case "expires":
                // §5.2.1: a date that does not parse leaves the attribute out.
                if let date = CookieDate.parse(attributeValue) { cookie.expires = date }
            case "max-age":
                if let seconds = parseMaxAge(attributeValue) { cookie.maxAge = seconds }
            case "domain":
                // §5.2.3: an empty value is ignored (RFC 6265bis says so explicitly); a leading
                // dot is dropped, the rest lowercased.
                var domain = attributeValue
                if domain.hasPrefix(".") { domain = domain.dropFirst() }
                // An IDN domain is compared in the Punycode its request host arrives in.
                cookie.domain = domain.isEmpty ? nil : CookieMatching.asciiHost(String(domain)) ?? domain.lowercased()
            case "path":
                // §5.2.4: a value that is empty or does not start with "/" means the default path.
                cookie.path = attributeValue.hasPrefix("/") ? String(attributeValue) : nil
            case "secure":
                cookie.isSecure = true
            case "httponly":
                cookie.isHTTPOnly = true
            case "samesite":
                // RFC 6265bis §5.6.7: anything but the three values is "not set".
                cookie.sameSite = Cookie.SameSite(rawValue: attributeValue.lowercased())
            default:
                continue
            }
        }
        return cookie
    }

    /// §5.2.2: an optional `-` and digits, else the attribute is ignored. Values beyond
    /// `Int64` saturate; the store clamps them to its longest lifetime anyway.
    static func parseMaxAge(_ value: Substring) -> Int64? {
        let negative = value.hasPrefix("-")
        let digits = negative ? value.dropFirst() : value
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        var result: Int64 = 0
        for byte in digits.utf8 {
            let (shifted, overflowA) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int64(byte - 0x30))
            if overflowA || overflowB { return negative ? Int64.min : Int64.max }
            result = sum
        }
        return negative ? -result : result
    }

    /// Trims space and horizontal tab (WSP), as §5.2 says, not other white space.
    private static func trimmed(_ string: Substring) -> Substring {
        var result = string
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}
