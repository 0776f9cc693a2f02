import Foundation
import Logging
import ServiceLifecycle
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHousekeeping

@Suite("storage monitor")
struct StorageMonitorTests {
    /// A cache that counts how often it was asked to purge.
    final class CountingCache: Purging {
        let purges = Atomic<Int>(0)
        let purgingName = "counting"
        func purge(_ request: PurgeRequest) async throws -> ByteCount {
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

    @Test("under pressure it purges the caches, then sweeps purgeable directories, and reports")
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

    final class PurgeLog: Sendable {
        let names = Mutex<[String]>([])
    }

    /// Records the order in which it and its siblings were purged, and frees space on a volume.
    final class OrderedPurger: Purging {
        let purgingName: String
        let purgingTier: PurgingTier
        let log: PurgeLog
        let volume: FakeVolume
        let frees: ByteCount
        init(_ name: String, _ tier: PurgingTier, log: PurgeLog, volume: FakeVolume, frees: ByteCount) {
            purgingName = name
            purgingTier = tier
            self.log = log
            self.volume = volume
            self.frees = frees
        }
        func purge(_ request: PurgeRequest) async throws -> ByteCount {
            log.names.withLock { $0.append(purgingName) }
            volume.available.withLock { $0 = $0 + frees }
            return frees
        }
    }

    @Test("tiers go temporary, HTTP cache, caches, purgeable directories, and stop once the pressure is gone")
    func tieredOrder() async throws {
        let fixture = try TestContainer()
        let purgeable = PurgeableDirectories(container: fixture.container)
        try await purgeable.register("Library/Caches/feeds", policy: .oneWeek)
        try fixture.file("Library/Caches/feeds/old", modified: Date().timeIntervalSince1970 - 30 * day)
        let volume = FakeVolume()
        let log = PurgeLog()
        let purgers: [any Purging] = [
            OrderedPurger("images", .cache, log: log, volume: volume, frees: .zero),
            OrderedPurger("http", .refetchable, log: log, volume: volume, frees: .zero),
            OrderedPurger("tmp", .temporary, log: log, volume: volume, frees: .zero),
        ]
        let monitor = StorageMonitor(purgeable: purgeable, caches: purgers, capacity: { volume.read() })

        volume.available.withLock { $0 = 100 * .megabyte }
        let everything = try #require(try await monitor.check())
        #expect(log.names.withLock { $0 } == ["tmp", "http", "images"])
        #expect(everything.sweep?.removedCount == 1)

        // Temporary files free enough: nothing else is touched.
        log.names.withLock { $0 = [] }
        let relieving = StorageMonitor(
            purgeable: purgeable,
            caches: [
                OrderedPurger("images", .cache, log: log, volume: volume, frees: .zero),
                OrderedPurger("tmp", .temporary, log: log, volume: volume, frees: 20 * .gigabyte),
            ],
            capacity: { volume.read() }
        )
        volume.available.withLock { $0 = 100 * .megabyte }
        let relieved = try #require(try await relieving.check())
        #expect(log.names.withLock { $0 } == ["tmp"])
        #expect(relieved.sweep == nil)
        #expect(!relieved.isStillUnderPressure)
    }

    @Test("temporary files older than the minimum age are purged through descriptors; newer ones stay")
    func temporaryFiles() async throws {
        let fixture = try TestContainer()
        let now = Date().timeIntervalSince1970
        try fixture.file("tmp/old-upload", bytes: 8_192, modified: now - 7_200)
        try fixture.file("tmp/old-dir/part", bytes: 4_096, modified: now - 7_200)
        try setModificationTime(fixture.url("tmp/old-dir"), now - 7_200)
        try fixture.file("tmp/writing-now", bytes: 4_096, modified: now)
        try fixture.symlink("tmp/link-out", to: fixture.url("Documents").path)
        try setModificationTime(fixture.url("tmp/link-out"), now - 7_200)
        try fixture.file("Documents/precious", bytes: 100)

        let freed = try await TemporaryFiles(container: fixture.container).purge()
        #expect(!fixture.exists("tmp/old-upload") && !fixture.exists("tmp/old-dir"))
        #expect(fixture.exists("tmp/writing-now"))
        #expect(fixture.exists("Documents/precious"))
        #expect(freed.rawValue >= 12_288)
    }

    @Test("started, it checks at its interval until stopped")
    func interval() async throws {
        let volume = FakeVolume()
        volume.available.withLock { $0 = 10 * .megabyte }
        let cache = CountingCache()
        var configuration = StorageMonitor.Configuration()
        // Not shorter: each check purges and logs, and under the full parallel suite this test's
        // task may wait seconds for a thread while the loop keeps checking.
        configuration.interval = .milliseconds(50)
        let monitor = StorageMonitor(
            purgeable: nil,
            caches: [],
            configuration: configuration,
            capacity: { volume.read() }
        )
        monitor.add(cache)
        let reports = monitor.reports()
        let service = Task { try await monitor.run() }
        var count = 0
        for await _ in reports {
            count += 1
            if count == 3 { break }
        }
        service.cancel()
        #expect(cache.purges.load(ordering: .relaxed) >= 3)
    }

    @Test("the monitor's interval follows the injected wait clock")
    func intervalFollowsTheClock() async throws {
        let hourly = HourlyMonitor()
        let (monitor, clock) = (hourly.monitor, hourly.clock)
        let service = Task { try await monitor.run() }
        defer { service.cancel() }
        try await eventually { hourly.checks == 1 && clock.sleeperCount == 1 }
        #expect(hourly.checks == 1, "the first check runs at once")
        clock.advance(by: .seconds(3_600))
        try await eventually { hourly.checks == 2 }
        #expect(hourly.checks == 2, "an hour on the injected clock later, the next")
    }

    @Test("as a Service it checks until its group shuts down gracefully, then stops")
    func service() async throws {
        let hourly = HourlyMonitor()
        let (monitor, clock) = (hourly.monitor, hourly.clock)
        let group = ServiceGroup(
            services: [monitor],
            gracefulShutdownSignals: [],
            cancellationSignals: [],
            logger: Logger(label: "test", factory: SwiftLogNoOpLogHandler.init)
        )
        let running = Task { try await group.run() }
        try await eventually { hourly.checks == 1 && clock.sleeperCount == 1 }
        await group.triggerGracefulShutdown()
        try await running.value
        // Stopped: the group returns only once the monitor's run() has (its checks are awaited
        // in that loop, none outlives it), its wait left the clock, and an hour on it brings no
        // further check.
        #expect(clock.sleeperCount == 0, "the monitor's wait ended with it")
        clock.advance(by: .seconds(3_600))
        #expect(hourly.checks == 1)
    }
}

/// A monitor that checks a volume with plenty of room every hour of a ``SteppedClock``, and
/// counts its checks.
private final class HourlyMonitor: Sendable {
    let monitor: StorageMonitor
    let clock: SteppedClock
    private let counter: CheckCounter
    /// Checks made so far.
    var checks: Int { counter.checks.load(ordering: .relaxed) }

    private final class CheckCounter: Sendable {
        let checks = Atomic<Int>(0)
        func count() { checks.add(1, ordering: .relaxed) }
    }

    init() {
        let clock = SteppedClock()
        var configuration = StorageMonitor.Configuration(interval: .seconds(3_600))
        configuration.waitClock = clock
        let counter = CheckCounter()
        monitor = StorageMonitor(purgeable: nil, configuration: configuration) {
            counter.count()
            return VolumeCapacity(total: 100 * .gigabyte, available: 90 * .gigabyte)
        }
        self.clock = clock
        self.counter = counter
    }
}
