import Foundation
import StowageCore
import StowageTestSupport
import Testing

@Suite("VolumeCapacity")
struct VolumeCapacityTests {
    #if os(Linux)  // Apple platforms report the resource values' figures, not statvfs's
    @Test("statvfs figures match Python's os.statvfs")
    func matchesStatvfs() async throws {
        let scratch = try TemporaryDirectory()
        let script = "import os,sys; s=os.statvfs(sys.argv[1]); print(s.f_blocks*s.f_frsize, s.f_bavail*s.f_frsize)"
        func python() throws -> [Int64] {
            try runCommand(["python3", "-c", script, scratch.path]).split(separator: " ")
                .compactMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        // Free space moves while other work writes: read Python's figure before and after ours,
        // and expect ours between the two (with 16 MiB of slack either side).
        let before = try python()
        let capacity = try await VolumeCapacity.forVolume(containing: scratch.url)
        let after = try python()
        try #require(before.count == 2 && after.count == 2)
        #expect(capacity.total.rawValue == before[0])
        let low = min(before[1], after[1]) - (16 << 20)
        let high = max(before[1], after[1]) + (16 << 20)
        #expect(
            (low...high).contains(capacity.available.rawValue),
            "\(capacity.available.rawValue) not in \(low)...\(high)"
        )
        #expect(capacity.availableForImportantUsage <= capacity.available)
        #expect(capacity.availableForOpportunisticUsage <= capacity.availableForImportantUsage)
    }
    #endif

    @Test("the reserves are 1% (≤ 1 GB) for important and 10% (≤ 10 GB) for opportunistic usage")
    func reserves() {
        let small = VolumeCapacity(total: ByteCount(10_000_000_000), available: ByteCount(5_000_000_000))
        #expect(small.availableForImportantUsage.rawValue == 5_000_000_000 - 100_000_000)
        #expect(small.availableForOpportunisticUsage.rawValue == 5_000_000_000 - 1_000_000_000)
        let huge = VolumeCapacity(total: ByteCount(1_000_000_000_000), available: ByteCount(50_000_000_000))
        #expect(huge.availableForImportantUsage.rawValue == 50_000_000_000 - 1_000_000_000)
        #expect(huge.availableForOpportunisticUsage.rawValue == 50_000_000_000 - 10_000_000_000)
        let full = VolumeCapacity(total: ByteCount(10_000_000_000), available: ByteCount(10_000_000))
        #expect(full.availableForImportantUsage == .zero)
        #expect(full.availableForOpportunisticUsage == .zero)
    }

    @Test("a missing path is notFound")
    func missing() {
        #expect {
            try VolumeCapacity.forVolume(containing: URL(filePath: "/nonexistent/stowage"))
        } throws: { ($0 as? StowageError)?.code == .notFound }
    }
}
