import Foundation
import StowageCore
import StowagePreferences

extension PreferenceValue {
    /// The value's type as `prefs list` shows it.
    var typeName: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .data: "data"
        case .date: "date"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// The value as `prefs get` prints it: strings raw, data as base64, dates in ISO 8601.
    var plainText: String {
        switch self {
        case .string(let value): value
        case .data(let value): value.base64EncodedString()
        default: description
        }
    }

    /// ``jsonObject``, checked: a value stored before NaN and infinities were refused is a
    /// `StowageError` naming it and saying how to replace it, never a Foundation exception.
    func jsonObject(name: String) throws -> Any {
        do {
            try checkRepresentable(path: name)
        } catch let error as StowageError {
            throw StowageError(
                code: .corrupt,
                message: """
                    cannot write the preferences as JSON: \(error.message); replace it with \
                    'stowage prefs set \(name) VALUE --type double' or 'stowage prefs remove \(name)'
                    """,
                cause: error
            )
        }
        return jsonObject
    }

    /// The value as a JSON object (data as base64, dates in ISO 8601).
    var jsonObject: Any {
        switch self {
        case .bool(let value): value
        case .int(let value): value
        case .double(let value): value
        case .string(let value): value
        case .data(let value): value.base64EncodedString()
        case .date(let value): value.formatted(.iso8601)
        case .array(let values): values.map(\.jsonObject)
        case .dictionary(let values): values.mapValues(\.jsonObject)
        }
    }
}

extension Output {
    /// Prints a JSON-compatible object (fragments allowed) on standard output.
    static func printJSONObject(_ object: Any) throws {
        let data = try JSONSerialization.data(
            withJSONObject: object,
            options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]
        )
        print(String(decoding: data, as: UTF8.self))
    }
}
