import Foundation
import StowageCore

/// One change in a preferences log: set a key, remove a key, or remove every key.
///
/// On disk a record is `length: UInt32 LE`, `crc: UInt32 LE` (CRC-32C of the payload), then the
/// payload: an operation byte, the key as a length-prefixed UTF-8 string, and for a set the
/// value's binary form (``PreferenceValue/encode(into:)``). A record whose checksum does not
/// match is a torn or damaged tail: reading stops there and never yields a value from it.
enum PreferencesLogRecord: Equatable {
    case set(key: String, value: PreferenceValue)
    case remove(key: String)
    case removeAll

    /// Bytes before the payload: its length and its checksum.
    static let prefixSize = 8
    /// Records larger than this are refused when written and treated as damage when read.
    static let maximumPayloadSize = 64 << 20

    private enum Operation: UInt8 {
        case set = 1, remove, removeAll
    }

    /// The record as it goes into the file: length, checksum, payload.
    func encoded() -> [UInt8] {
        var buffer: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0]
        buffer.reserveCapacity(32)
        switch self {
        case .set(let key, let value):
            buffer.append(Operation.set.rawValue)
            buffer.appendLengthPrefixed(key)
            value.encode(into: &buffer)
        case .remove(let key):
            buffer.append(Operation.remove.rawValue)
            buffer.appendLengthPrefixed(key)
        case .removeAll:
            buffer.append(Operation.removeAll.rawValue)
        }
        let payloadCount = UInt32(buffer.count - Self.prefixSize)
        let checksum = buffer.withUnsafeBytes {
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[Self.prefixSize...]))
        }
        buffer.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: payloadCount.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: 4, as: UInt32.self)
        }
        return buffer
    }

    /// The outcome of reading the record at the start of some bytes.
    enum Read {
        /// A sound record and how many bytes it took.
        case record(PreferencesLogRecord, size: Int)
        /// The bytes end before the record does (an append in flight, or a torn tail).
        case incomplete
        /// The bytes are not a sound record: bad length, checksum or payload.
        case damaged(reason: String)
    }

    /// Reads the record at the start of `bytes`.
    static func read(from bytes: UnsafeRawBufferPointer) -> Read {
        guard bytes.count >= prefixSize else { return .incomplete }
        let payloadCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
        let storedChecksum = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        guard payloadCount > 0, payloadCount <= maximumPayloadSize else {
            return .damaged(reason: "record length \(payloadCount)")
        }
        guard bytes.count >= prefixSize + payloadCount else { return .incomplete }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[prefixSize..<prefixSize + payloadCount])
        guard CRC32C.checksum(payload) == storedChecksum else { return .damaged(reason: "checksum mismatch") }
        do {
            var reader = BinaryReader(payload)
            let rawOperation = try reader.readByte()
            let record: PreferencesLogRecord
            switch Operation(rawValue: rawOperation) {
            case .set:
                let key = try reader.readLengthPrefixedString()
                record = .set(key: key, value: try PreferenceValue.decode(from: &reader))
            case .remove:
                record = .remove(key: try reader.readLengthPrefixedString())
            case .removeAll:
                record = .removeAll
            case nil:
                return .damaged(reason: "unknown operation \(rawOperation)")
            }
            guard reader.remaining == 0 else { return .damaged(reason: "\(reader.remaining) stray bytes") }
            return .record(record, size: prefixSize + payloadCount)
        } catch {
            return .damaged(reason: "\(error)")
        }
    }
}
