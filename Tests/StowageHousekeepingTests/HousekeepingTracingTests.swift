import Foundation
import InMemoryTracing
import StowageCore
import StowageTestSupport
import Synchronization
import Testing
import Tracing

@testable import StowageHousekeeping

/// The spans of cleaner runs and storage-monitor purges, with an `InMemoryTracer` given to each
/// (never the process-wide `InstrumentationSystem`).
@Suite struct HousekeepingTracingTests {
    @Test("a cleaner run records one span with the bytes it freed")
    func cleanerRun() async throws {
        let fixture = try TestContainer()
        try fixture.file("Library/Caches/web/a", bytes: 50_000)
        try fixture.file("Library/Caches/web/b", bytes: 50_000)
        let tracer = InMemoryTracer()
        let report = try await CacheCleaner(container: fixture.container, tracer: tracer).clean(
            CleanManifest(tasks: [.path("Library/Caches/web", entries: [])])
        )
        #expect(report.bytesFreed > .zero)
        let run = try #require(
            tracer.finishedSpans.first { $0.operationName == HousekeepingTracing.SpanName.cleanerRun }
        )
        #expect(run.attributes.get(HousekeepingTracing.Attribute.bytesFreed) == .int64(report.bytesFreed.rawValue))
        #expect(run.attributes.get(HousekeepingTracing.Attribute.dryRun) == false)
        #expect(run.attributes.get(HousekeepingTracing.Attribute.taskCount) == 1)
        #expect(run.attributes.get(HousekeepingTracing.Attribute.errorCount) == 0)
    }

    @Test("a check that finds room records nothing; a purge under pressure records its span")
    func monitorPurge() async throws {
        let cache = StorageMonitorTests.CountingCache()
        let volume = StorageMonitorTests.FakeVolume()
        let tracer = InMemoryTracer()
        var configuration = StorageMonitor.Configuration()
        configuration.tracer = tracer
        let monitor = StorageMonitor(
            purgeable: nil,
            caches: [cache],
            configuration: configuration,
            capacity: { volume.read() }
        )
        #expect(try await monitor.check() == nil)
        #expect(tracer.finishedSpans.isEmpty)

        volume.available.withLock { $0 = 100 * .megabyte }
        let report = try #require(try await monitor.check())
        let purge = try #require(tracer.finishedSpans.first { $0.operationName == HousekeepingTracing.SpanName.purge })
        #expect(purge.attributes.get(HousekeepingTracing.Attribute.bytesFreed) == .int64(report.bytesFreed.rawValue))
        #expect(report.bytesFreed == 5 * .megabyte)
        #expect(
            purge.attributes.get(HousekeepingTracing.Attribute.stillUnderPressure) == .bool(report.isStillUnderPressure)
        )
    }
}
