import Foundation
import HTTPTypes
import Testing

@testable import StowageHTTPCache

/// A record read back from the shared level (a Redis that lies) or a damaged file may hold any
/// bits. Times the rules cannot do arithmetic on used to trap later (`Int64(responseTime)`);
/// they are a malformed record now, which the cache treats as a miss.
@Suite("Hostile HTTP cache records")
struct HostileRecordTests {
    static func record(forced: Double? = 600) -> VariantRecord {
        let response = HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=60"])
        let stored = StoredResponse(
            response: response,
            requestSeconds: 1_700_000_000,
            responseSeconds: 1_700_000_001,
            varyingFields: [],
            forcedExpirySeconds: forced,
            bodyLength: 3
        )
        return VariantRecord(stored: stored, bodyKey: "body", isMemoryOnly: false)
    }

    /// `bytes` with the little-endian bits of `old` replaced by those of `new` (the times are
    /// unique values in a record).
    static func replacing(_ old: Double, with new: Double, in bytes: [UInt8]) throws -> [UInt8] {
        let oldBytes = withUnsafeBytes(of: old.bitPattern.littleEndian, Array.init)
        let range = try #require(bytes.firstRange(of: oldBytes))
        var bytes = bytes
        bytes.replaceSubrange(range, with: withUnsafeBytes(of: new.bitPattern.littleEndian, Array.init))
        return bytes
    }

    @Test(
        "a record whose times are NaN, infinite, negative or huge decodes as malformed, not a trap",
        arguments: [
            (1_700_000_000.0, Double.nan), (1_700_000_001, .infinity), (1_700_000_001, 1e300), (1_700_000_000, -1),
            (600, -5), (600, 1e20), (600, .infinity),
        ] as [(Double, Double)]
    )
    func implausibleTimesAreMalformed(field: Double, value: Double) throws {
        let bytes = try Self.replacing(field, with: value, in: VariantRecord.encode([Self.record()]))
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(bytes)) }
    }

    @Test("a stored response made with NaN or infinite times is clamped, not a trap")
    func storedResponseClampsTimes() {
        let stored = StoredResponse(
            response: HTTPResponse(status: .ok),
            requestSeconds: .nan,
            responseSeconds: .infinity
        )
        #expect(stored.requestTime == Date(timeIntervalSince1970: 0))
        #expect(stored.responseTime == Date(timeIntervalSince1970: StoredResponse.latestTime))
        let distant = StoredResponse(
            response: HTTPResponse(status: .ok),
            requestTime: .distantPast,  // before 1970
            responseTime: Date(timeIntervalSince1970: 1e300)  // after the year 5000
        )
        #expect(distant.requestTime == Date(timeIntervalSince1970: 0))
        #expect(distant.responseTime == Date(timeIntervalSince1970: StoredResponse.latestTime))
        #expect(stored.response.headerFields[.date] != nil)
    }

    @Test("a record with ordinary times still decodes")
    func ordinaryRecordDecodes() throws {
        let original = Self.record()
        let decoded = try VariantRecord.decode(Data(VariantRecord.encode([original])))
        #expect(decoded == [original])
    }
}
