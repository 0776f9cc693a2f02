/// Little-endian integers and `UInt32`-length-prefixed UTF-8 strings: the binary framing of
/// the preferences log and the secret store's items, written and read in one place.

/// Reads little-endian integers and length-prefixed strings from a byte buffer, checking bounds.
package struct BinaryReader {
    /// The bytes do not hold what the format says they should.
    package struct Malformed: Error, CustomStringConvertible {
        package var reason: String
        package var description: String { reason }
        package init(reason: String) { self.reason = reason }
    }

    private let bytes: UnsafeRawBufferPointer
    package private(set) var offset: Int

    package init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    package var remaining: Int { bytes.count - offset }

    package mutating func readByte() throws -> UInt8 {
        guard remaining >= 1 else { throw Malformed(reason: "truncated at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func readUInt32() throws -> UInt32 {
        guard remaining >= 4 else { throw Malformed(reason: "truncated at byte \(offset)") }
        defer { offset += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    package mutating func readUInt64() throws -> UInt64 {
        guard remaining >= 8 else { throw Malformed(reason: "truncated at byte \(offset)") }
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    package mutating func readBytes(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else {
            throw Malformed(reason: "\(count) bytes wanted at byte \(offset), \(remaining) left")
        }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    package mutating func readLengthPrefixedString() throws -> String {
        let count = Int(try readUInt32())
        let raw = try readBytes(count)
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw Malformed(reason: "string at byte \(offset - count) is not UTF-8")
        }
        return string
    }
}

extension [UInt8] {
    package mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    package mutating func appendLengthPrefixed(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            appendLittleEndian(UInt32(utf8.count))
            append(contentsOf: utf8)
        }
    }
}
