import Foundation
import StowageCore

/// Turns values into bytes for a disk cache and back.
///
/// Stowage provides ``DataSerializer``, ``StringSerializer``, ``JSONSerializer`` and
/// ``PropertyListSerializer``; conform your own type for another format.
public protocol CacheSerializer<Value>: Sendable {
    /// The type of the values.
    associatedtype Value
    /// The bytes that represent `value`.
    func encode(_ value: Value) throws -> Data
    /// The value `data` represents.
    ///
    /// - Throws: An error when the bytes are not a value of this format; ``HybridCache`` then
    ///   treats the entry as missing and removes it.
    func decode(_ data: Data) throws -> Value
}

/// Bytes as they are.
public struct DataSerializer: CacheSerializer {
    /// A serializer that passes bytes through.
    public init() {}
    /// The data as it is.
    public func encode(_ value: Data) throws -> Data { value }
    /// The data as it is.
    public func decode(_ data: Data) throws -> Data { data }
}

/// Text as UTF-8.
public struct StringSerializer: CacheSerializer {
    /// A UTF-8 serializer.
    public init() {}
    /// The string's UTF-8 bytes.
    public func encode(_ value: String) throws -> Data { Data(value.utf8) }

    /// - Throws: `StowageError` `.corrupt` when the bytes are not valid UTF-8.
    public func decode(_ data: Data) throws -> String {
        guard let text = String(validating: data, as: UTF8.self) else {
            throw StowageError(code: .corrupt, message: "cached bytes are not valid UTF-8 text")
        }
        return text
    }
}

/// Any `Codable` value as JSON.
public struct JSONSerializer<Value: Codable & Sendable>: CacheSerializer {
    /// A JSON serializer for `Value`.
    public init(_ type: Value.Type = Value.self) {}
    /// The value as JSON.
    public func encode(_ value: Value) throws -> Data { try JSONEncoder().encode(value) }
    /// The value decoded from JSON.
    public func decode(_ data: Data) throws -> Value { try JSONDecoder().decode(Value.self, from: data) }
}

/// Any `Codable` value as a binary property list: smaller and faster to decode than JSON for
/// numbers and data.
public struct PropertyListSerializer<Value: Codable & Sendable>: CacheSerializer {
    /// A binary property list serializer for `Value`.
    public init(_ type: Value.Type = Value.self) {}

    /// The value as a binary property list.
    public func encode(_ value: Value) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(value)
    }

    /// The value decoded from a property list.
    public func decode(_ data: Data) throws -> Value { try PropertyListDecoder().decode(Value.self, from: data) }
}
