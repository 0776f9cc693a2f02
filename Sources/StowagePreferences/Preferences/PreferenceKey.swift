import Foundation
import StowageCore

/// A typed preference: its name in the store, its default, and how its value is stored.
///
/// ```swift
/// extension Preferences.Key {
///     static var launchCount: Preferences.Key<Int> { .init("launchCount", default: 0) }
/// }
/// let launches = preferences[.launchCount]
/// ```
///
/// Plain types (``PreferenceRepresentable``) are stored as themselves; any other `Codable`
/// value is stored as its JSON encoding (`.data`), which is also how it appears in an
/// exported property list. Reading a missing value, or one stored with another type, gives
/// the default.
public struct PreferenceKey<Value: Sendable>: Sendable {
    /// The name under which the value is stored.
    public let name: String
    /// The value reads give when the store has none (or one of another type).
    public let defaultValue: Value
    let encode: @Sendable (Value) throws -> PreferenceValue
    @usableFromInline let decode: @Sendable (PreferenceValue) -> Value?
    /// True for the `nil` of an optional key: setting it removes the stored value.
    let isAbsent: @Sendable (Value) -> Bool

    /// A key for a plain value: `Bool`, `Int`, `Double`, `String`, `Data`, `Date`, arrays and
    /// string-keyed dictionaries of them.
    public init(_ name: String, default defaultValue: Value) where Value: PreferenceRepresentable {
        self.name = name
        self.defaultValue = defaultValue
        self.encode = { $0.preferenceValue }
        self.decode = { Value(preferenceValue: $0) }
        self.isAbsent = { _ in false }
    }

    /// A key for any `Codable` value, stored as JSON data.
    public init(_ name: String, default defaultValue: Value) where Value: Codable {
        self.name = name
        self.defaultValue = defaultValue
        self.encode = { value in
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return .data(try encoder.encode(value))
        }
        self.decode = { stored in
            guard case .data(let data) = stored else { return nil }
            return try? JSONDecoder().decode(Value.self, from: data)
        }
        self.isAbsent = { _ in false }
    }

    /// A key for an optional plain value: missing reads as `nil`; setting `nil` removes it.
    public init<Wrapped: PreferenceRepresentable>(_ name: String) where Value == Wrapped? {
        self.name = name
        self.defaultValue = nil
        self.encode = { value in
            // `Preferences.set` removes the key for nil before encoding; this is never reached with nil.
            guard let value else {
                throw StowageError(code: .invalidArgument, message: "nil for preference \(name.debugDescription)")
            }
            return value.preferenceValue
        }
        self.decode = { Wrapped(preferenceValue: $0) }
        self.isAbsent = { $0 == nil }
    }
}

extension Preferences {
    /// A typed preference: `Preferences.Key<Int>("launchCount", default: 0)`.
    public typealias Key<Value: Sendable> = PreferenceKey<Value>
}
