import Foundation
import StowageCore
import StowageHousekeeping
import StowageTestSupport
import Testing

@testable import StowageCache

#if canImport(Glibc)
import Glibc
#endif

/// Storage pressure frees what the volume needs, below the caches' own limits if it must.
@Suite("storage pressure")
struct StoragePressureTests {
    private static let valueSize = 100 << 10

    /// A cache with no limits of its own, dated by `clock`: 10 expired inline entries, then
    /// `count` file values of 100 KiB written a second apart, of which the second half is read
    /// later (so the first half is least recently used, oldest first).
    private static func filledCache(at directory: URL, clock: ManualClock, count: Int) throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "images")
        configuration.clock = clock.cacheClock
        configuration.sizeLimit = nil
        let cache = try DiskCache(directory: directory, configuration: configuration)
        for index in 0..<10 {
            try cache.setData(
                Data(repeating: 1, count: 1_000),
                forKey: "expiring\(index)",
                timeToLive: .seconds(5)
            )
        }
        for index in 0..<count {
            try cache.setData(Data(repeating: UInt8(index % 251), count: valueSize), forKey: "image\(index)")
            clock.advance(by: .seconds(1))
        }
        clock.advance(by: .seconds(60))
        for index in (count / 2)..<count { _ = try cache.data(forKey: "image\(index)") }
        return cache
    }

    @Test("a purge request frees the bytes asked below the cache's limits: expired first, then least recently used")
    func purgeRequestGoesBelowLimits() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try Self.filledCache(at: scratch.url.appending(path: "images"), clock: clock, count: 40)
        #expect(try await cache.purge() == ByteCount(10 * 1_000))  // its own rules: only the expired

        let freed = try await cache.purge(PurgeRequest(bytesToFree: ByteCount(Int64(5 * Self.valueSize + 1))))
        #expect(freed == ByteCount(Int64(6 * Self.valueSize)))  // whole values, just past what was asked
        for index in 0..<40 {
            let present = try await cache.contains(key: "image\(index)")
            #expect(present == (index >= 6), "image\(index)")
        }
        // Asking for more than it holds empties it, and says how much that was.
        let rest = try await cache.purge(PurgeRequest(bytesToFree: 1 * .gigabyte))
        #expect(rest == ByteCount(Int64(34 * Self.valueSize)))
        #expect(try await cache.usage().count == 0)
    }

    @Test("on a full small volume the monitor frees space until it is back above the threshold; documents stay")
    func monitorRelievesARealVolume() async throws {
        // A real 64 MiB tmpfs when this machine lets us mount one; otherwise the same real caches
        // and files in a temporary directory, with the volume's size injected and its use measured.
        let volume = SmallVolume(bytes: 64 << 20)
        let scratch = try TemporaryDirectory()
        let root = volume.map { URL(filePath: $0.path) } ?? scratch.url
        let container = Container(root: root.appending(path: "app"))
        let volumeSize = ByteCount(64 << 20)
        let noReserves = VolumeCapacity.Reserves(important: .bytes(.zero), opportunistic: .bytes(.zero))
        let isMounted = volume != nil
        let capacity: @Sendable () throws -> VolumeCapacity = {
            if isMounted { return try VolumeCapacity.forVolume(containing: root, reserves: noReserves) }
            let used = try DiskUsage.measure(root).totals.allocatedBytes
            return VolumeCapacity(total: volumeSize, available: volumeSize - used, reserves: noReserves)
        }

        let documents = try await container.directory(for: .documents)
        let essay = Data(patternedBytes(8 << 20))
        try essay.write(to: documents.appending(path: "essay.bin"))
        let clock = ManualClock()
        let caches = try await container.directory(for: .caches)
        let images = caches.appending(path: "images")
        let cache = try await onOwnThread { try Self.filledCache(at: images, clock: clock, count: 400) }
        let configuration = StorageMonitor.Configuration(
            minimumFreeFraction: 0.30,
            minimumFreeBytes: 1 * .megabyte,
            interval: .seconds(3600),
            reserves: noReserves
        )
        let before = try capacity()
        #expect(configuration.isUnderPressure(before), "the fill must put the volume under pressure: \(before)")

        let monitor = StorageMonitor(purgeable: nil, caches: [cache], configuration: configuration, capacity: capacity)
        let reports = monitor.reports()
        let service = Task { try await monitor.run() }
        defer { service.cancel() }
        var iterator = reports.makeAsyncIterator()
        let report = try #require(await iterator.next())

        let after = try capacity()
        #expect(!report.isStillUnderPressure)
        #expect(!configuration.isUnderPressure(after), "free \(after.availableForOpportunisticUsage) of \(after.total)")
        #expect(report.bytesFreed > .zero)
        // What the pressure needed, not the whole cache: the recently read half is all still there.
        let remaining = try await cache.usage().count
        #expect(remaining >= 200 && remaining < 400, "\(remaining) entries left")
        for index in 200..<400 { #expect(try await cache.contains(key: "image\(index)")) }
        #expect(try Data(contentsOf: documents.appending(path: "essay.bin")) == essay)
    }
}
