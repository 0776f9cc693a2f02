import Foundation

/// A type a preferences store keeps natively, without a Codable round trip: the property-list
/// types and arrays and string-keyed dictionaries of them.
///
/// Other `Codable` types work too (`PreferenceKey/init(_:default:)-(_,Value)` stores them as
/// JSON data); conforming a type here only makes it cheaper and readable in an exported plist.
public protocol PreferenceRepresentable: Codable, Sendable {
    /// The stored form of `self`.
    var preferenceValue: PreferenceValue { get }
    /// Reads a stored value; `nil` when it holds another type.
    init?(preferenceValue: PreferenceValue)
}

extension Bool: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .bool(self) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .bool(let value) = preferenceValue else { return nil }
        self = value
    }
}

extension Int: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .int(self) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .int(let value) = preferenceValue else { return nil }
        self = value
    }
}

extension Double: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .double(self) }
    /// Reads a double, or an integer (a property list writes `2.0` as `<real>2</real>`, and a
    /// hand-edited one may say `<integer>2</integer>`).
    public init?(preferenceValue: PreferenceValue) {
        switch preferenceValue {
        case .double(let value): self = value
        case .int(let value): self = Double(value)
        default: return nil
        }
    }
}

extension String: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .string(self) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .string(let value) = preferenceValue else { return nil }
        self = value
    }
}

extension Data: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .data(self) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .data(let value) = preferenceValue else { return nil }
        self = value
    }
}

extension Date: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .date(self) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .date(let value) = preferenceValue else { return nil }
        self = value
    }
}

extension Array: PreferenceRepresentable where Element: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .array(map(\.preferenceValue)) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .array(let values) = preferenceValue else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let element = Element(preferenceValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
}

extension Dictionary: PreferenceRepresentable where Key == String, Value: PreferenceRepresentable {
    /// The value as preferences store it.
    public var preferenceValue: PreferenceValue { .dictionary(mapValues(\.preferenceValue)) }
    /// The value `preferenceValue` holds, or `nil` when it holds another type.
    public init?(preferenceValue: PreferenceValue) {
        guard case .dictionary(let values) = preferenceValue else { return nil }
        var result: [String: Value] = [:]
        result.reserveCapacity(values.count)
        for (key, value) in values {
            guard let element = Value(preferenceValue: value) else { return nil }
            result[key] = element
        }
        self = result
    }
}
