import Foundation
import Testing

@testable import StowageCore

@Suite("CRC32C")
struct CRC32CTests {
    @Test("the check value of CRC-32C: '123456789' → 0xE3069283 (RFC 3720 §B.4)")
    func checkValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // RFC 3720 B.4: 32 bytes of zeros.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    }

    @Test("hardware and table agree on every length 0...300 at every alignment, and chunks continue")
    func hardwareMatchesTable() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<400).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for start in 0..<8 {
                for length in 0...300 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    #expect(CRC32C.checksum(slice) == CRC32C.softwareChecksum(slice))
                }
            }
            let whole = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[0..<400]))
            let first = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[0..<123]))
            #expect(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[123..<400]), continuing: first) == whole)
        }
    }

    @Test(
        "hardware and table agree across the three-stream paths (768 B and 24 KiB blocks), at any alignment",
        arguments: [767, 768, 769, 1_024, 4_095, 24_575, 24_576, 24_577, 50_000, 100_003, 1 << 20]
    )
    func longInputs(length: Int) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<length + 8).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for start in [0, 1, 3, 7] {
                let slice = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                #expect(CRC32C.checksum(slice) == CRC32C.softwareChecksum(slice), "length \(length) start \(start)")
            }
            let whole = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[0..<length]))
            let cut = length / 3
            let first = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[0..<cut]))
            #expect(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[cut..<length]), continuing: first) == whole)
        }
    }

    @Test("one flipped bit anywhere changes the checksum")
    func detectsFlips() {
        let bytes = Array(repeating: UInt8(0x5A), count: 1_024)
        let reference = CRC32C.checksum(bytes)
        for position in stride(from: 0, to: bytes.count * 8, by: 37) {
            var damaged = bytes
            damaged[position / 8] ^= 1 << (position % 8)
            #expect(CRC32C.checksum(damaged) != reference)
        }
    }
}
