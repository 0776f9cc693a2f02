import Foundation
import StowageCore

/// The compact binary form of a ``PreferenceValue`` inside a log record.
///
/// One tag byte, then the payload: fixed 8 bytes little-endian for numbers and dates, a 32-bit
/// length and the bytes for strings and data, a 32-bit count and the elements for arrays and
/// dictionaries (each dictionary key as a length-prefixed UTF-8 string). Decoding checks every
/// length against the bytes that remain, so a damaged record is an error, never a wrong value.
extension PreferenceValue {
    private enum Tag: UInt8 {
        case bool = 1, int, double, string, data, date, array, dictionary
    }

    /// Appends the binary form of `self` to `buffer`.
    func encode(into buffer: inout [UInt8]) {
        switch self {
        case .bool(let value):
            buffer.append(Tag.bool.rawValue)
            buffer.append(value ? 1 : 0)
        case .int(let value):
            buffer.append(Tag.int.rawValue)
            buffer.appendLittleEndian(UInt64(bitPattern: Int64(value)))
        case .double(let value):
            buffer.append(Tag.double.rawValue)
            buffer.appendLittleEndian(value.bitPattern)
        case .string(let value):
            buffer.append(Tag.string.rawValue)
            buffer.appendLengthPrefixed(value)
        case .data(let value):
            buffer.append(Tag.data.rawValue)
            buffer.appendLittleEndian(UInt32(value.count))
            buffer.append(contentsOf: value)
        case .date(let value):
            buffer.append(Tag.date.rawValue)
            buffer.appendLittleEndian(value.timeIntervalSince1970.bitPattern)
        case .array(let values):
            buffer.append(Tag.array.rawValue)
            buffer.appendLittleEndian(UInt32(values.count))
            for value in values { value.encode(into: &buffer) }
        case .dictionary(let values):
            buffer.append(Tag.dictionary.rawValue)
            buffer.appendLittleEndian(UInt32(values.count))
            for (key, value) in values {
                buffer.appendLengthPrefixed(key)
                value.encode(into: &buffer)
            }
        }
    }

    /// Reads one value from `reader`.
    ///
    /// - Throws: ``BinaryReader/Malformed`` when the bytes are not a value.
    static func decode(from reader: inout BinaryReader, depth: Int = 0) throws -> PreferenceValue {
        guard depth < 64 else { throw BinaryReader.Malformed(reason: "values nested deeper than 64 levels") }
        let rawTag = try reader.readByte()
        guard let tag = Tag(rawValue: rawTag) else {
            throw BinaryReader.Malformed(reason: "unknown value tag \(rawTag)")
        }
        switch tag {
        case .bool:
            let byte = try reader.readByte()
            guard byte <= 1 else { throw BinaryReader.Malformed(reason: "boolean byte \(byte)") }
            return .bool(byte == 1)
        case .int:
            return .int(Int(Int64(bitPattern: try reader.readUInt64())))
        case .double:
            return .double(Double(bitPattern: try reader.readUInt64()))
        case .string:
            return .string(try reader.readLengthPrefixedString())
        case .data:
            let count = Int(try reader.readUInt32())
            return .data(Data(try reader.readBytes(count)))
        case .date:
            return .date(Date(timeIntervalSince1970: Double(bitPattern: try reader.readUInt64())))
        case .array:
            let count = Int(try reader.readUInt32())
            // Each element takes at least two bytes: a count beyond that is damage, not a huge array.
            guard count <= reader.remaining / 2 else { throw BinaryReader.Malformed(reason: "array count \(count)") }
            var values: [PreferenceValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try decode(from: &reader, depth: depth + 1)) }
            return .array(values)
        case .dictionary:
            let count = Int(try reader.readUInt32())
            guard count <= reader.remaining / 6 else {
                throw BinaryReader.Malformed(reason: "dictionary count \(count)")
            }
            var values: [String: PreferenceValue] = [:]
            values.reserveCapacity(count)
            for _ in 0..<count {
                let key = try reader.readLengthPrefixedString()
                values[key] = try decode(from: &reader, depth: depth + 1)
            }
            return .dictionary(values)
        }
    }
}
