/// `count` bytes of a fixed pattern, for large test bodies; the same `count` and `seed` always
/// give the same bytes.
///
/// Mapping every index through a closure costs seconds for tens of megabytes in a debug build,
/// on one of the few cooperative threads every other test waits for. This builds one block of a
/// prime length (65,521 bytes) and copies it, so a body is ready in milliseconds; no power-of-two
/// stride (a chunk or page size) lines up with the pattern, so chunks served out of order or
/// twice still compare unequal.
public func patternedBytes(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
    let blockLength = 65_521
    let block = (0..<min(count, blockLength)).map { index in
        UInt8(truncatingIfNeeded: (index &* 0x9E37_79B1) >> 11) &+ seed
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    while bytes.count < count { bytes.append(contentsOf: block.prefix(count - bytes.count)) }
    return bytes
}
