import Foundation
import HTTPTypes
import StowageCore

/// One stored variant of a URL: the response's metadata and where its body is.
///
/// All variants of a URL (several when the origin sends `Vary`) live in one record under the
/// URL's key; each body under its own key. The record is a small binary frame, so it stays
/// inline in the disk cache's index and decodes in microseconds.
///
/// Versions: 1 ends each variant after its varying fields; 2 (written since the will-cache hook
/// could attach user info) adds the user info after them — a `UInt32` count, then each key and
/// value length-prefixed, keys in ascending order. Version 1 records still read, with no user
/// info; any other version, a truncated or garbled section, or user info over
/// ``CacheProposal``'s limits is malformed, which the cache treats as a miss.
struct VariantRecord: Sendable, Hashable {
    var stored: StoredResponse
    /// The disk cache key of the body.
    var bodyKey: String
    /// Kept in memory only (the will-cache hook asked for it).
    var isMemoryOnly: Bool

    /// The version written.
    static let formatVersion: UInt8 = 2
    /// The version before user info; read, never written.
    static let formatVersionWithoutUserInfo: UInt8 = 1

    static func encode(_ records: [VariantRecord]) -> [UInt8] {
        encode(records, version: formatVersion)
    }

    /// `records` in `version`'s layout; version 1 leaves the user info out (tests write it to
    /// check that records stored before version 2 still read).
    static func encode(_ records: [VariantRecord], version: UInt8) -> [UInt8] {
        var bytes: [UInt8] = [version]
        bytes.appendLittleEndian(UInt32(records.count))
        for record in records {
            let stored = record.stored
            bytes.appendLengthPrefixed(record.bodyKey)
            bytes.appendLittleEndian(UInt16(stored.response.status.code))
            bytes.appendLengthPrefixed(stored.response.status.reasonPhrase)
            bytes.appendLittleEndian(stored.requestSeconds.bitPattern)
            bytes.appendLittleEndian(stored.responseSeconds.bitPattern)
            bytes.appendLittleEndian((stored.forcedExpirySeconds ?? .nan).bitPattern)
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
            if version >= 2 {
                bytes.appendLittleEndian(UInt32(stored.userInfo.count))
                for (key, value) in stored.userInfo.sorted(by: { $0.key < $1.key }) {
                    bytes.appendLengthPrefixed(key)
                    bytes.appendLengthPrefixed(value)
                }
            }
        }
        return bytes
    }

    /// Decodes a record; throws on any malformation (the caller treats it as a miss).
    static func decode(_ data: Data) throws -> [VariantRecord] {
        try data.withUnsafeBytes { raw in
            var reader = BinaryReader(raw)
            let version = try reader.readByte()
            guard version == formatVersion || version == formatVersionWithoutUserInfo else {
                throw BinaryReader.Malformed(reason: "unknown HTTP cache record version \(version)")
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
                let userInfo = version >= 2 ? try reader.readUserInfo() : [:]
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
                    requestSeconds: requestTime,
                    responseSeconds: responseTime,
                    varyingFields: varying,
                    forcedExpirySeconds: forced.isNaN ? nil : forced,
                    bodyLength: length < 0 ? nil : length,
                    userInfo: userInfo
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
    /// A user-info section: a count, then length-prefixed keys and values. More entries or bytes
    /// than ``CacheProposal`` allows, or a key twice, is malformed: a count read from damaged
    /// bytes must not make the reader allocate or loop without bound.
    mutating func readUserInfo() throws -> [String: String] {
        let count = Int(try readUInt32())
        guard count <= CacheProposal.maximumUserInfoCount else {
            throw Malformed(reason: "\(count) user info entries")
        }
        var userInfo: [String: String] = [:]
        var size = 0
        for _ in 0..<count {
            let key = try readLengthPrefixedString()
            let value = try readLengthPrefixedString()
            size += key.utf8.count + value.utf8.count
            guard size <= CacheProposal.maximumUserInfoSize else {
                throw Malformed(reason: "user info over \(CacheProposal.maximumUserInfoSize) bytes")
            }
            guard userInfo.updateValue(value, forKey: key) == nil else {
                throw Malformed(reason: "user info key twice")
            }
        }
        return userInfo
    }

    mutating func readUInt16() throws -> UInt16 {
        let low = UInt16(try readByte())
        let high = UInt16(try readByte())
        return low | high << 8
    }
}
