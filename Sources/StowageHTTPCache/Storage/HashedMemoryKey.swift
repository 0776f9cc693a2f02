/// The memory level's key of an entry found by a request's hash (a prepared answer, a spilled
/// one): a prefix byte no record or body key starts with, then the hash's 64 bits in 13
/// base-32 digits — 14 bytes, within a small string's 15, so forming it allocates nothing.
///
/// Formed on every hit, twice on one from the spill file: written digit by digit here, where
/// `String(_:radix:)` with a concatenation took 1.9% of the proxy's samples (`perf`, 10^5 URLs).
enum HashedMemoryKey {
    /// `prefix` followed by `hash` in base 32.
    static func make(prefix: UInt8, hash: Int) -> String {
        var value = UInt64(UInt(bitPattern: hash))
        return String(unsafeUninitializedCapacity: 14) { buffer in
            buffer[0] = prefix
            for index in stride(from: 13, through: 1, by: -1) {
                let digit = UInt8(truncatingIfNeeded: value & 31)
                buffer[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
                value >>= 5
            }
            return 14
        }
    }
}
