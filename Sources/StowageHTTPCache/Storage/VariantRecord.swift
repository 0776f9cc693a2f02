import Foundation
import HTTPTypes
import StowageCore

/// One stored variant of a URL: the response's metadata and where its body is.
///
/// All variants of a URL (several when the origin sends `Vary`) live in one record under the
/// URL's key; each body under its own key. The record is a small binary frame (version 1),
/// so it stays inline in the disk cache's index and decodes in microseconds.
struct VariantRecord: Sendable, Hashable {
    var stored: StoredResponse
    /// The disk cache key of the body.
    var bodyKey: String
    /// Kept in memory only (the will-cache hook asked for it).
    var isMemoryOnly: Bool

    static let formatVersion: UInt8 = 1

    static func encode(_ records: [VariantRecord]) -> [UInt8] {
        var bytes: [UInt8] = [formatVersion]
        bytes.appendLittleEndian(UInt32(records.count))
        for record in records {
            let stored = record.stored
            bytes.appendLengthPrefixed(record.bodyKey)
            bytes.appendLittleEndian(UInt16(stored.response.status.code))
            bytes.appendLengthPrefixed(stored.response.status.reasonPhrase)
            bytes.appendLittleEndian(stored.requestTime.bitPattern)
            bytes.appendLittleEndian(stored.responseTime.bitPattern)
            bytes.appendLittleEndian((stored.forcedExpiry ?? .nan).bitPattern)
            bytes.appendLittleEndian(stored.bodyLength ?? -1)
            bytes.appendLittleEndian(UInt32(stored.response.headerFields.count))
            for field in stored.response.headerFields {
                bytes.appendLengthPrefixed(field.name.rawName)
                bytes.appendLengthPrefixed(field.value)
            }
            bytes.appendLittleEndian(UInt32(stored.varyingFields.count))
            for varying in stored.varyingFields {
                bytes.appendLengthPrefixed(varying.name)
                bytes.append(varying.value == nil ? 0 : 1)
                bytes.appendLengthPrefixed(varying.value ?? "")
            }
        }
        return bytes
    }

    /// Decodes a record; throws on any malformation (the caller treats it as a miss).
    static func decode(_ data: Data) throws -> [VariantRecord] {
        try data.withUnsafeBytes { raw in
            var reader = BinaryReader(raw)
            guard try reader.readByte() == formatVersion else {
                throw BinaryReader.Malformed(reason: "unknown HTTP cache record version")
            }
            let count = Int(try reader.readUInt32())
            guard count <= 1024 else { throw BinaryReader.Malformed(reason: "\(count) variants") }
            var records: [VariantRecord] = []
            for _ in 0..<count {
                let bodyKey = try reader.readLengthPrefixedString()
                let code = Int(try reader.readUInt16())
                let reason = try reader.readLengthPrefixedString()
                let requestTime = Double(bitPattern: try reader.readUInt64())
                let responseTime = Double(bitPattern: try reader.readUInt64())
                let forced = Double(bitPattern: try reader.readUInt64())
                let length = Int64(bitPattern: try reader.readUInt64())
                let fieldCount = Int(try reader.readUInt32())
                var fields = HTTPFields()
                for _ in 0..<fieldCount {
                    let name = try reader.readLengthPrefixedString()
                    let value = try reader.readLengthPrefixedString()
                    guard let fieldName = HTTPField.Name(name) else {
                        throw BinaryReader.Malformed(reason: "bad field name")
                    }
                    fields.append(HTTPField(name: fieldName, value: value))
                }
                let varyingCount = Int(try reader.readUInt32())
                var varying: [StoredResponse.VaryingField] = []
                for _ in 0..<varyingCount {
                    let name = try reader.readLengthPrefixedString()
                    let present = try reader.readByte() == 1
                    let value = try reader.readLengthPrefixedString()
                    varying.append(.init(name: name, value: present ? value : nil))
                }
                guard (100...999).contains(code) else { throw BinaryReader.Malformed(reason: "status \(code)") }
                // A record from the shared level or a damaged file may carry any bits: times the
                // rules' arithmetic (`Int64(responseTime)`, ages) cannot take are a miss, not a trap.
                guard Self.isPlausibleTime(requestTime), Self.isPlausibleTime(responseTime) else {
                    throw BinaryReader.Malformed(reason: "request or response time out of range")
                }
                guard forced.isNaN || (forced >= 0 && forced <= Double(CacheControl.maximumDeltaSeconds)) else {
                    throw BinaryReader.Malformed(reason: "forced expiry \(forced)")
                }
                let response = HTTPResponse(status: .init(code: code, reasonPhrase: reason), headerFields: fields)
                let stored = StoredResponse(
                    response: response,
                    requestTime: requestTime,
                    responseTime: responseTime,
                    varyingFields: varying,
                    forcedExpiry: forced.isNaN ? nil : forced,
                    bodyLength: length < 0 ? nil : length
                )
                records.append(VariantRecord(stored: stored, bodyKey: bodyKey, isMemoryOnly: false))
            }
            return records
        }
    }
}

extension VariantRecord {
    /// Seconds since 1970 the rules can do arithmetic on: from 1970 to the year 5000.
    static func isPlausibleTime(_ seconds: Double) -> Bool {
        seconds >= 0 && seconds <= StoredResponse.latestTime
    }
}

extension BinaryReader {
    mutating func readUInt16() throws -> UInt16 {
        let low = UInt16(try readByte())
        let high = UInt16(try readByte())
        return low | high << 8
    }
}
