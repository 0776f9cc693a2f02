import Foundation
import StowageCore

/// `checksum.crc32c-1KiB`: the CRC-32C every stored value carries, over a 1 KiB value, against
/// the table-driven CRC-32C (what the preferences log used before) and a 1 KiB `memcpy` (the
/// floor of touching the bytes at all).
struct ChecksumScenario: Scenario {
    var name: String { "checksum.crc32c-1KiB" }

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let rounds = 200_000
        let bytes = (0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        var destination = [UInt8](repeating: 0, count: 1_024)
        let (hardware, hardwareSum) = bytes.withUnsafeBytes { raw in
            BenchContext.median(context.iterations) {
                var sum: UInt32 = 0
                for _ in 0..<rounds { sum &+= CRC32C.checksum(raw, continuing: sum & 1) }
                return sum
            }
        }
        let (table, tableSum) = bytes.withUnsafeBytes { raw in
            BenchContext.median(context.iterations) {
                var sum: UInt32 = 0
                for _ in 0..<rounds { sum &+= CRC32C.softwareChecksum(raw, continuing: sum & 1) }
                return sum
            }
        }
        let (copy, _) = bytes.withUnsafeBytes { raw in
            destination.withUnsafeMutableBytes { target in
                BenchContext.median(context.iterations) {
                    for round in 0..<rounds {
                        target.copyMemory(from: raw)
                        target[round & 1023] ^= 1  // keeps the copy from being optimised away
                    }
                    return target[0]
                }
            }
        }
        let perOperation = { (seconds: Double) in seconds / Double(rounds) * 1e9 }
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: perOperation(hardware),
            baselines: ["crc32c-table": perOperation(table), "memcpy-1KiB": perOperation(copy)],
            ok: hardwareSum == tableSum,
            notes:
                "CRC-32C of 1 KiB (\(CRC32C.isHardwareAccelerated ? "CPU instruction" : "table: no CRC instruction")); "
                + "equal to the table's result"
        )
    }
}
