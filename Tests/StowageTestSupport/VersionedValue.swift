import Foundation

/// Values that name the key and the version they were written as, for crash tests that must tell
/// a torn or wrong value from an old one: a 16-byte header (key number and version, little
/// endian) and a body that only that pair produces.
///
/// Sizes run from 50 bytes to about 120 KB; a third of them are over 16 KiB (a disk cache's
/// default inline threshold), so both values in the index and values in files are written.
public enum VersionedValue {
    /// The value of `key` at `version`; the same pair always gives the same bytes.
    public static func make(key: Int, version: Int) -> Data {
        var seed = UInt64(truncatingIfNeeded: key) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: version)
        seed = mix(seed)
        let count = seed % 3 == 0 ? 17_000 + Int((seed >> 8) % 103_000) : 50 + Int((seed >> 8) % 16_000)
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        words[0] = UInt64(truncatingIfNeeded: key).littleEndian
        if words.count > 1 { words[1] = UInt64(truncatingIfNeeded: version).littleEndian }
        var state = seed | 1
        for index in words.indices.dropFirst(2) {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[index] = state
        }
        return words.withUnsafeBytes { Data($0.prefix(count)) }
    }

    /// The key number and version a value's header names, or `nil` for fewer than 16 bytes.
    public static func header(of value: Data) -> (key: Int, version: Int)? {
        guard value.count >= 16 else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: value.prefix(16)) }
        return (
            Int(truncatingIfNeeded: UInt64(littleEndian: words.0)),
            Int(truncatingIfNeeded: UInt64(littleEndian: words.1))
        )
    }

    /// SplitMix64's finalizer: spreads nearby keys and versions over the whole range.
    private static func mix(_ value: UInt64) -> UInt64 {
        var value = value
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
