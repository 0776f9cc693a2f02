import Foundation
import NIOCore

/// How an entry is stored in Redis: a 12-byte header, then the value's bytes.
///
/// ```
/// "SW" 0x01 0x00 | expiry: Int64 big-endian, milliseconds since 1970, 0 = none | bytes…
/// ```
///
/// The expiry travels with the bytes so one `GET` tells a reader how long the value has left
/// (to give its disk and memory copies the same lifetime) without a second round trip for
/// `PTTL`. Bytes without the header (a key some other program wrote) read as a miss.
package enum SharedEntryFormat {
    static let headerLength = 12

    /// `now` is the tier's ``RedisSharedTier/Options/entryClock``; tests that plant an entry
    /// without an expiry may leave it out.
    package static func encode(_ data: Data, timeToLive: TimeInterval?, now: Date = Date()) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(headerLength + data.count)
        buffer.writeBytes([UInt8(ascii: "S"), UInt8(ascii: "W"), 1, 0])
        // Clamped, not trapped: a time-to-live past Int64 milliseconds (`.seconds(Int64.max)`)
        // expires at the latest instant the header can say, one as far below at its earliest
        // (0 would say "no expiry").
        let expiry =
            timeToLive.map { timeToLive -> Int64 in
                let milliseconds = ((now.timeIntervalSince1970 + timeToLive) * 1000).rounded(.up)
                return Int64(exactly: milliseconds) ?? (milliseconds > 0 ? .max : 1)
            } ?? 0
        buffer.writeInteger(expiry)
        buffer.writeBytes(data)
        return buffer
    }

    static func decode(_ buffer: ByteBuffer, now: Date) -> (data: Data, timeToLive: TimeInterval?)? {
        var buffer = buffer
        guard buffer.readableBytes >= headerLength,
            buffer.readBytes(length: 4) == [UInt8(ascii: "S"), UInt8(ascii: "W"), 1, 0],
            let expiry = buffer.readInteger(as: Int64.self)
        else { return nil }
        let data = buffer.readData(length: buffer.readableBytes) ?? Data()
        guard expiry != 0 else { return (data, nil) }
        let remaining = Double(expiry) / 1000 - now.timeIntervalSince1970
        // Expired by the writer's clock but not yet by Redis' (clock skew): a miss.
        return remaining > 0 ? (data, remaining) : nil
    }
}

extension ByteBuffer {
    fileprivate mutating func readData(length: Int) -> Data? {
        guard let bytes = readBytes(length: length) else { return nil }
        return Data(bytes)
    }
}
