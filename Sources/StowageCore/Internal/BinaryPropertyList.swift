import Foundation

/// A binary property list read through `PropertyListDecoder` (Foundation's Swift parser)
/// instead of `PropertyListSerialization`.
///
/// On Linux `PropertyListSerialization` parses binary lists with CoreFoundation and bridges
/// the result to Swift; a crafted list holding a set inside an array crashes that bridge (a
/// null dereference in `Set._conditionallyBridgeFromObjectiveC`, found by Fuzz/run.sh manifest
/// with Swift 6.3.1), so a hostile manifest could kill the process. The decoder reads the same
/// format, reports a set as a type mismatch, and gives the manifest parser the same `Any` tree.
package enum BinaryPropertyList {
    /// Whether `data` starts with the binary property list magic, `bplist`.
    package static func isBinary(_ data: Data) -> Bool {
        data.starts(with: Array("bplist".utf8))
    }

    /// Decodes `data` into strings, numbers, booleans, dates, data, arrays and dictionaries.
    ///
    /// - Throws: `DecodingError` for a malformed list or a value of another type (a set, a UID).
    package static func decode(_ data: Data) throws -> Any {
        let decoder = PropertyListDecoder()
        decoder.userInfo[Budget.key] = Budget()
        return try decoder.decode(Value.self, from: data).any
    }

    /// Deepest nesting accepted; a manifest needs three levels (array, task, entries).
    package static let maximumDepth = 16
    /// Most values accepted in one list.
    package static let maximumValues = 100_000

    /// Values left to decode. A binary list refers to objects by index, so a few hundred bytes
    /// can describe a cycle or a tree of billions of shared nodes (found by the fuzzer: a list
    /// that held itself kept the decoder busy until libFuzzer's timeout); the budget and the
    /// depth limit end both.
    private final class Budget: @unchecked Sendable {
        // Unchecked: used by one decode call on one thread, never shared.
        static let key = CodingUserInfoKey(rawValue: "org.stowage.manifest.budget")!
        var remaining = BinaryPropertyList.maximumValues
    }

    /// One property-list value.
    private enum Value: Decodable {
        case string(String)
        case bool(Bool)
        case integer(Int64)
        case real(Double)
        case date(Date)
        case data(Data)
        case array([Value])
        case dictionary([String: Value])

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            if let budget = decoder.userInfo[Budget.key] as? Budget {
                budget.remaining -= 1
                guard budget.remaining >= 0, decoder.codingPath.count <= BinaryPropertyList.maximumDepth else {
                    throw DecodingError.dataCorrupted(
                        .init(
                            codingPath: [],
                            debugDescription: "it holds more than \(BinaryPropertyList.maximumValues) values or "
                                + "nests deeper than \(BinaryPropertyList.maximumDepth) levels (a reference cycle?)"
                        )
                    )
                }
            }
            if var container = try? decoder.unkeyedContainer() {
                var values: [Value] = []
                while !container.isAtEnd { values.append(try container.decode(Value.self)) }
                self = .array(values)
            } else if let container = try? decoder.container(keyedBy: Key.self) {
                var values: [String: Value] = [:]
                for key in container.allKeys { values[key.stringValue] = try container.decode(Value.self, forKey: key) }
                self = .dictionary(values)
            } else {
                let container = try decoder.singleValueContainer()
                if let value = try? container.decode(String.self) {
                    self = .string(value)
                } else if let value = try? container.decode(Bool.self) {
                    self = .bool(value)
                } else if let value = try? container.decode(Int64.self) {
                    self = .integer(value)
                } else if let value = try? container.decode(Double.self) {
                    self = .real(value)
                } else if let value = try? container.decode(Date.self) {
                    self = .date(value)
                } else {
                    self = .data(try container.decode(Data.self))
                }
            }
        }

        var any: Any {
            switch self {
            case .string(let value): value
            case .bool(let value): value
            case .integer(let value): value
            case .real(let value): value
            case .date(let value): value
            case .data(let value): value
            case .array(let values): values.map(\.any)
            case .dictionary(let values): values.mapValues(\.any)
            }
        }
    }
}
