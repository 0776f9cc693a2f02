/// The directives of a targeted cache-control field (RFC 9213 §2.1), e.g. `CDN-Cache-Control`.
extension CacheControl {
    /// The directives that take a delta-seconds argument: RFC 9213 §2.1 maps a numeric argument to
    /// an Integer (RFC 8941 §3.3.1), and delta-seconds (RFC 9111 §1.2.2) is never negative.
    static let targetedIntegerDirectives: Set<String> = [
        "max-age", "s-maxage", "stale-while-revalidate", "stale-if-error",
    ]
    /// The directives that take no argument: RFC 9213 §2.1 maps them to Boolean true (a bare key,
    /// or `?1`).
    static let targetedFlagDirectives: Set<String> = [
        "no-store", "no-transform", "must-revalidate", "proxy-revalidate", "must-understand", "public",
        "immutable",
    ]
    /// The directives that take an optional list of field names: Boolean true, or a String holding
    /// the comma-separated names (RFC 9213 §2.1).
    static let targetedFieldListDirectives: Set<String> = ["no-cache", "private"]

    /// The directives of a targeted field value, or `nil` when the field is to be ignored.
    ///
    /// - RFC 9213 §2.1: the value is a Dictionary (RFC 8941 §3.2); parameters are ignored on all
    ///   members; a key given twice counts once, with its last value (RFC 8941 §4.2.2).
    /// - RFC 9213 §2.2: a field that is empty or fails to parse is ignored, as if it were absent.
    /// - RFC 9213 §2.1: consumers "SHOULD NOT consume values that violate these inferred
    ///   constraints" (an Integer for `max-age`, Boolean true for `no-store`, Boolean true or a
    ///   String for `private`): such a member makes the whole field invalid, so the cache falls
    ///   back to the next targeted field or to `Cache-Control`, as for a parse error, rather
    ///   than following what is left of a field its sender got wrong (`max-age="60"`, `max-age=6.5`,
    ///   `max-age=-1`, `no-store=?0`, `private=1`).
    ///
    /// Unknown directives are kept with any value (RFC 9111 §5.2.3); their argument is the
    /// String's or Token's text or the Integer's digits.
    init?(targeted value: String) {
        guard let members = StructuredDictionary.parse(value), !members.isEmpty else { return nil }
        var directives: [Directive] = []
        for member in members {
            guard let directive = Self.targetedDirective(member) else { return nil }
            directives.append(directive)
        }
        self.init(directives)
    }

    private static func targetedDirective(_ member: StructuredDictionary.Member) -> Directive? {
        let name = member.key
        if targetedIntegerDirectives.contains(name) {
            guard case .item(.integer(let seconds)) = member.value, seconds >= 0 else { return nil }
            return Directive(name, String(seconds))
        }
        if targetedFlagDirectives.contains(name) {
            guard case .item(.boolean(true)) = member.value else { return nil }
            return Directive(name)
        }
        if targetedFieldListDirectives.contains(name) {
            switch member.value {
            case .item(.boolean(true)): return Directive(name)
            case .item(.string(let fields)): return Directive(name, fields)
            default: return nil
            }
        }
        switch member.value {
        case .item(.integer(let number)): return Directive(name, String(number))
        case .item(.string(let text)), .item(.token(let text)): return Directive(name, text)
        default: return Directive(name)
        }
    }
}
