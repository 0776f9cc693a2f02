import Foundation

/// A value as a preferences store keeps it: the property-list types UserDefaults accepts.
///
/// Typed access goes through ``PreferenceKey``; this enum is what the log stores, what
/// observers of untyped changes receive, and what import and export map to property lists.
public enum PreferenceValue: Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case data(Data)
    /// A point in time, stored as seconds since 1970 (sub-microsecond precision).
    case date(Date)
    case array([PreferenceValue])
    case dictionary([String: PreferenceValue])

    /// The text logs and messages show.
    public var description: String {
        switch self {
        case .bool(let value): "\(value)"
        case .int(let value): "\(value)"
        case .double(let value): "\(value)"
        case .string(let value): value.debugDescription
        case .data(let value): "<\(value.count) bytes>"
        case .date(let value): value.formatted(.iso8601)
        case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let values):
            "["
                + values.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription): \($0.value)" }
                .joined(separator: ", ") + "]"
        }
    }
}
