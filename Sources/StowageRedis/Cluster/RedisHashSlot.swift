/// Redis Cluster's key → slot function: CRC16 (XMODEM: polynomial 0x1021, initial 0) of the key,
/// modulo 16384; when the key has a non-empty `{…}` hash tag, only the tag is hashed, so
/// `user:{42}:profile` and `user:{42}:sessions` share a slot (and a node).
///
/// The rule is the cluster specification's ("Hash tags" in the Redis/Valkey cluster spec); the
/// spec's own check value is `CRC16("123456789") == 0x31C3`.
public enum RedisHashSlot {
    /// Slots in a cluster.
    public static let count = 16_384

    /// The slot of `key`.
    public static func slot(for key: some Collection<UInt8>) -> Int {
        Int(crc16(hashedPart(of: key)) & 0x3FFF)
    }

    /// The slot of a text key.
    public static func slot(for key: String) -> Int { slot(for: key.utf8) }

    /// The part of `key` that is hashed: the first `{…}` if non-empty, else the whole key.
    static func hashedPart<Key: Collection<UInt8>>(of key: Key) -> Key.SubSequence {
        if let open = key.firstIndex(of: UInt8(ascii: "{")) {
            let afterOpen = key.index(after: open)
            if let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen {
                return key[afterOpen..<close]
            }
        }
        return key[...]
    }

    /// CRC16-CCITT (XMODEM), table-driven.
    public static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
