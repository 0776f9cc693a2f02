/// An entity tag (RFC 9110 §8.8.3): an opaque string, weak or strong.
///
/// ```swift
/// let stored = EntityTag(parsing: "W/\"v1\"")!
/// stored.matchesWeakly(EntityTag(parsing: "\"v1\"")!)   // true
/// stored.matchesStrongly(EntityTag(parsing: "\"v1\"")!) // false: one side is weak
/// ```
public struct EntityTag: Sendable, Hashable, CustomStringConvertible {
    /// The characters between the quotes.
    public var opaqueTag: String
    /// Whether the tag had the `W/` prefix.
    public var isWeak: Bool

    /// Creates a tag.
    public init(opaqueTag: String, isWeak: Bool = false) {
        self.opaqueTag = opaqueTag
        self.isWeak = isWeak
    }

    /// Parses `"xyz"` or `W/"xyz"`; `nil` for anything else.
    public init?(parsing text: some StringProtocol) {
        var list = EntityTag.parseList(text)
        guard list.count == 1, let only = list.popLast(), let tag = only else { return nil }
        self = tag
    }

    /// The field form, e.g. `W/"xyz"`.
    public var description: String { (isWeak ? "W/" : "") + "\"\(opaqueTag)\"" }

    /// Weak comparison (RFC 9110 §8.8.3.2): the opaque tags are equal, either may be weak.
    public func matchesWeakly(_ other: EntityTag) -> Bool { opaqueTag == other.opaqueTag }

    /// Strong comparison: neither is weak and the opaque tags are equal.
    public func matchesStrongly(_ other: EntityTag) -> Bool { !isWeak && !other.isWeak && opaqueTag == other.opaqueTag }

    /// Parses an `If-None-Match`/`If-Match` value: `nil` elements stand for `*`; malformed
    /// elements are dropped.
    static func parseList(_ text: some StringProtocol) -> [EntityTag?] {
        let bytes = Array(text.utf8)
        var result: [EntityTag?] = []
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            if byte == 0x20 || byte == 0x09 || byte == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if byte == UInt8(ascii: "*") {
                result.append(nil)
                i += 1
                continue
            }
            var weak = false
            if byte == UInt8(ascii: "W"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "/") {
                weak = true
                i += 2
            }
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                while i < bytes.count, bytes[i] != UInt8(ascii: ",") { i += 1 }
                continue
            }
            let start = i + 1
            var end = start
            // etagc excludes DQUOTE; no escapes in entity tags.
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
            guard end < bytes.count else { break }
            result.append(EntityTag(opaqueTag: String(decoding: bytes[start..<end], as: UTF8.self), isWeak: weak))
            i = end + 1
        }
        return result
    }
}
