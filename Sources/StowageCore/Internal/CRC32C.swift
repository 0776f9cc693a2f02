import CStowageShims
import Foundation

/// CRC-32C (Castagnoli): the checksum every stored value, preferences record and secret
/// carries, verified on read so that damaged bytes are a miss, never a wrong answer.
///
/// The CPU's CRC instruction does it where there is one (SSE 4.2 on x86-64, ARMv8): a few
/// gigabytes per second, so a 1 KiB value costs well under a microsecond (`stowage-bench
/// --filter checksum`). It detects every error of up to 3 bits in a message of this size and
/// all burst errors up to 32 bits; it is not a cryptographic hash (secrets use AEAD for that).
package enum CRC32C {
    /// The checksum of `bytes`, continuing from `crc` (a previous chunk's result, or 0).
    package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        return stowage_crc32c(crc, base, bytes.count)
    }

    /// The checksum of `data`, continuing from `crc`.
    package static func checksum(_ data: Data, continuing crc: UInt32 = 0) -> UInt32 {
        data.withUnsafeBytes { checksum($0, continuing: crc) }
    }

    /// The checksum of `bytes`, continuing from `crc`.
    package static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }

    /// Whether the CPU's instruction computes it on this machine.
    package static var isHardwareAccelerated: Bool { stowage_crc32c_is_hardware() != 0 }

    /// The table-driven form, for tests that compare the two.
    package static func softwareChecksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        return stowage_crc32c_software(crc, base, bytes.count)
    }
}
