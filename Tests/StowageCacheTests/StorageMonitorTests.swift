import Foundation
import StowageCore
import Synchronization
import Testing

@testable import StowageCache

@Suite("storage monitor")
struct StorageMonitorTests {
    /// A cache that counts how often it was asked to purge.
    final class CountingCache: Purging {
        let purges = Atomic<Int>(0)
        let purgingName = "counting"
        func purge() async throws -> ByteCount {
            purges.add(1, ordering: .relaxed)
            return 5 * .megabyte
        }
    }

    /// A capacity the test controls: opportunistic equals available (no reserves).
    final class FakeVolume: Sendable {
        let available = Mutex<ByteCount>(50 * .gigabyte)
        func read() -> VolumeCapacity {
            VolumeCapacity(
                total: 100 * .gigabyte,
                available: available.withLock { $0 },
                reserves: .init(important: .bytes(.zero), opportunistic: .bytes(.zero))
            )
        }
    }

    @Test(
        "pressure is below 10% or below 200 MB of opportunistic capacity",
        arguments: [
            (100_000, 5_000, true), (100_000, 11_000, false), (1_000, 150, true), (1_000, 300, false),
        ] as [(Int64, Int64, Bool)]
    )
    func thresholds(totalMB: Int64, availableMB: Int64, underPressure: Bool) {
        let capacity = VolumeCapacity(
            total: totalMB * .megabyte,
            available: availableMB * .megabyte,
            reserves: .init(important: .bytes(.zero), opportunistic: .bytes(.zero))
        )
        #expect(StorageMonitor.Configuration().isUnderPressure(capacity) == underPressure)
        var strict = StorageMonitor.Configuration()
        strict.minimumFreeFraction = 0.5
        #expect(strict.isUnderPressure(capacity), "configurable")
    }

    @Test("under pressure it sweeps purgeable directories, then purges the caches, and reports")
    func purgesUnderPressure() async throws {
        let fixture = try TestContainer()
        let now = Date().timeIntervalSince1970
        let purgeable = PurgeableDirectories(container: fixture.container)
        try await purgeable.register("Library/Caches/feeds", policy: .oneWeek)
        try fixture.file("Library/Caches/feeds/old", modified: now - 30 * day)
        try fixture.file("Library/Caches/feeds/new", modified: now)
        let cache = CountingCache()
        let volume = FakeVolume()
        let callbacks = Atomic<Int>(0)
        let monitor = StorageMonitor(
            purgeable: purgeable,
            caches: [cache],
            capacity: { volume.read() },
            onReport: { _ in callbacks.add(1, ordering: .relaxed) }
        )

        // Plenty of space: nothing happens.
        #expect(try await monitor.check() == nil)
        #expect(cache.purges.load(ordering: .relaxed) == 0)
        #expect(fixture.exists("Library/Caches/feeds/old"))

        volume.available.withLock { $0 = 100 * .megabyte }
        let reports = monitor.reports()
        let report = try #require(try await monitor.check())
        #expect(report.sweep?.removedCount == 1)
        #expect(!fixture.exists("Library/Caches/feeds/old") && fixture.exists("Library/Caches/feeds/new"))
        #expect(cache.purges.load(ordering: .relaxed) == 1)
        #expect(report.caches.map(\.name) == ["counting"])
        #expect(report.bytesFreed == 5 * .megabyte + report.sweep!.bytesFreed)
        #expect(report.isStillUnderPressure)
        #expect(callbacks.load(ordering: .relaxed) == 1)
        var iterator = reports.makeAsyncIterator()
        #expect(await iterator.next()?.sweep?.removedCount == 1)
    }

    @Test("started, it checks at its interval until stopped")
    func interval() async throws {
        let volume = FakeVolume()
        volume.available.withLock { $0 = 10 * .megabyte }
        let cache = CountingCache()
        var configuration = StorageMonitor.Configuration()
        configuration.interval = .milliseconds(5)
        let monitor = StorageMonitor(
            purgeable: nil,
            caches: [],
            configuration: configuration,
            capacity: { volume.read() }
        )
        monitor.add(cache)
        let reports = monitor.reports()
        monitor.start()
        var count = 0
        for await _ in reports {
            count += 1
            if count == 3 { break }
        }
        monitor.stop()
        #expect(cache.purges.load(ordering: .relaxed) >= 3)
    }
}
