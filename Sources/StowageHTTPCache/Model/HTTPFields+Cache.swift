import HTTPTypes

extension HTTPField.Name {
    /// `Cache-Status` (RFC 9211).
    public static let cacheStatus = HTTPField.Name("Cache-Status")!
    /// `Pragma` (RFC 9111 §5.4, deprecated but honoured as `no-cache` when `Cache-Control` is absent).
    public static let pragma = HTTPField.Name("Pragma")!
}

extension HTTPFields {
    /// All lines of `name` joined as one list value.
    func combined(_ name: HTTPField.Name) -> String? {
        let values = self[values: name]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// The `Cache-Control` directives of all its lines.
    var cacheControl: CacheControl { CacheControl(parsing: self[values: .cacheControl]) }

    /// The value of a date field, or `.invalid` when present but not an HTTP-date.
    ///
    /// - Parameters:
    ///   - strict: Accept only the exact grammar (``HTTPDate/parseStrict(_:now:)``), as for
    ///     `Expires`, where an invalid date means "already expired" (RFC 9111 §5.3).
    ///   - now: When the fields were received, in seconds since 1970 (an RFC 850 date's century).
    func date(_ name: HTTPField.Name, strict: Bool = false, now: Double) -> FieldDate {
        let values = self[values: name]
        guard let first = values.first else { return .absent }
        // RFC 9111 §4.2.1: with several values, use the first or treat as stale; we use the first.
        let parsed =
            strict ? HTTPDate.parseStrict(first, nowSeconds: now) : HTTPDate.parse(first, nowSeconds: now)
        return parsed.map(FieldDate.date) ?? .invalid
    }
}

/// A date field's value: absent, a valid date, or present but not parseable.
enum FieldDate: Hashable, Sendable {
    case absent
    case date(Int64)
    case invalid

    var value: Int64? {
        if case .date(let value) = self { return value }
        return nil
    }
}
