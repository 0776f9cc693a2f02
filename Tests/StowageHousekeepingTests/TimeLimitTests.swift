import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHousekeeping

/// Time budgets (Apple's storage guide: background cleanup stops when its time runs out): each
/// job stops between two entries when its limit is spent and reports what it did and what is
/// left. A ``TickingClock`` moves one second per read, so a limit of n seconds is n checks.
@Suite("time limits")
struct TimeLimitTests {
    private let longAgo = Date().timeIntervalSince1970 - 60 * 86_400

    /// A container and its purgeable directories, whose time limits run on a ``TickingClock``.
    private func ticking(_ name: String = #function) throws -> (TestContainer, PurgeableDirectories) {
        let fixture = try TestContainer(name)
        var configuration = PurgeableDirectories.Configuration()
        configuration.timeLimitClock = TickingClock(step: .seconds(1))
        return (fixture, PurgeableDirectories(container: fixture.container, configuration: configuration))
    }

    @Test("a sweep stops at its time limit, says so, reports the directories it did not reach; a second sweep finishes")
    func sweepStops() async throws {
        let (fixture, purgeable) = try ticking()
        try await purgeable.register("Library/Caches/feeds", policy: .oneWeek)
        try await purgeable.register("Library/Caches/thumbs", policy: .oneWeek)
        for index in 0..<40 { try fixture.file("Library/Caches/feeds/\(index)", bytes: 10, modified: longAgo) }
        try fixture.file("Library/Caches/thumbs/old", modified: longAgo)

        let first = try await purgeable.sweep(timeLimit: .seconds(10))
        #expect(first.reachedTimeLimit)
        #expect(first.directories.map(\.reachedTimeLimit) == [true, true])
        #expect(first.directories[0].removedForAge > 0 && first.directories[0].removedForAge < 40)
        #expect(first.directories[1].removedCount == 0, "not reached")
        #expect(fixture.exists("Library/Caches/thumbs/old"))

        let second = try await purgeable.sweep()
        #expect(!second.reachedTimeLimit)
        #expect(first.directories[0].removedForAge + second.directories[0].removedForAge == 40)
        #expect(!fixture.exists("Library/Caches/thumbs/old"))
    }

    @Test("a reset stops at its time limit; the bytes left are measured all the same")
    func resetStops() async throws {
        let (fixture, purgeable) = try ticking()
        try await purgeable.register("Documents/drafts", policy: .manual)
        for index in 0..<30 { try fixture.file("Documents/drafts/\(index)", bytes: 4_096) }
        let report = try await purgeable.resetAll(timeLimit: .seconds(8))
        let drafts = try #require(report.directories.first)
        #expect(drafts.reachedTimeLimit && drafts.removedByReset > 0 && drafts.removedByReset < 30)
        let left = fixture.files(under: "Documents/drafts").count
        #expect(left == 30 - drafts.removedByReset)
        #expect(drafts.remainingBytes > .zero)
    }

    @Test("a reset of many subdirectories stops at its time limit with a report, never a thrown TimeLimitReached")
    func resetLimitBeforeRemoving() async throws {
        let (fixture, purgeable) = try ticking()
        try await purgeable.register("Documents/drafts", policy: .manual)
        try await purgeable.register("Documents/later", policy: .manual)
        // Subdirectories: measuring the tree before removing checked the limit at each one, and
        // the TimeLimitReached it threw escaped resetAll (a package type, not a report).
        for index in 0..<30 { try fixture.file("Documents/drafts/\(index)/file", bytes: 4_096) }
        try fixture.file("Documents/later/file")
        let report = try await purgeable.resetAll(timeLimit: .seconds(4))
        #expect(report.directories.map(\.reachedTimeLimit) == [true, true])
        let drafts = try #require(report.directories.first)
        let left = fixture.files(under: "Documents/drafts").count
        #expect(left > 0 && left < 30, "\(left) files left")
        #expect(drafts.removedByReset > 0, "the removals done are counted")
        #expect(drafts.bytesFreed.rawValue >= Int64(4_096 * (30 - left)), "what went is counted freed")
        #expect(drafts.remainingBytes.rawValue >= Int64(4_096 * left), "what is left is measured")
        #expect(fixture.exists("Documents/later/file"))
    }

    @Test("a reset frees nothing for a file whose other hard link is outside the directory")
    func resetHardLinkOutside() async throws {
        let fixture = try TestContainer()
        let purgeable = PurgeableDirectories(container: fixture.container)
        try await purgeable.register("Documents/drafts", policy: .manual)
        let kept = try fixture.file("Documents/kept", bytes: 1 << 20)
        try FileManager.default.createDirectory(at: fixture.url("Documents/drafts"), withIntermediateDirectories: true)
        #expect(link(kept.path, fixture.url("Documents/drafts/linked").path) == 0)
        // Measured before and after, the link's blocks looked freed, yet they stay with Documents/kept.
        let report = try await purgeable.resetAll()
        let drafts = try #require(report.directories.first)
        #expect(drafts.removedByReset == 1 && !fixture.exists("Documents/drafts/linked"))
        #expect(drafts.bytesFreed == .zero, "\(drafts.bytesFreed) reported freed")
    }

    @Test("files that vanish between a sweep's walk and its trim are not counted removed or freed")
    func sweepTrimVanished() async throws {
        let fixture = try TestContainer()
        let paths = (0..<4).map { fixture.url("Library/Caches/feeds/\($0)").path }
        // Read 1 makes the deadline, 2 is the check before the directory, 3–6 the walk's four
        // files, 7 the trim's check before the directory: another process empties it then.
        let clock = ActingClock(at: 7) { for path in paths { unlink(path) } }
        var configuration = PurgeableDirectories.Configuration()
        configuration.timeLimitClock = clock
        let purgeable = PurgeableDirectories(container: fixture.container, configuration: configuration)
        try await purgeable.register("Library/Caches/feeds", policy: .manual, sizeCap: ByteCount(8_192))
        for index in 0..<4 { try fixture.file("Library/Caches/feeds/\(index)", bytes: 4_096) }
        let report = try await purgeable.sweep(timeLimit: .seconds(1_000))
        let feeds = try #require(report.directories.first)
        #expect(clock.reads > 7, "the trim ran")
        #expect(fixture.files(under: "Library/Caches/feeds").isEmpty)
        // ENOENT at the trim's unlinkat was taken for a removal, as the marked items once did.
        #expect(feeds.removedForCap == 0, "\(feeds.removedForCap) counted removed")
        #expect(feeds.bytesFreed == .zero, "\(feeds.bytesFreed) counted freed")
    }

    @Test("marked items: the removal stops at its time limit and counts what is left")
    func markedItemsStop() async throws {
        let fixture = try TestContainer()
        for index in 0..<20 { try fixture.file("Documents/exports/\(index).zip", modified: longAgo + Double(index)) }
        do {
            for index in 0..<20 { try Marks.setPurgeable(true, at: fixture.url("Documents/exports/\(index).zip")) }
        } catch StowageError.Code.unsupported {
            return
        }
        let marked = MarkedItems(container: fixture.container, timeLimitClock: TickingClock(step: .seconds(1)))
        // The scan reads the clock once per entry too: a limit past the scan, short of the end.
        let report = try await marked.purge(atLeast: nil, timeLimit: .seconds(30))
        #expect(report.reachedTimeLimit)
        #expect(report.removed.count > 0 && report.removed.count < 20, "\(report.removed.count)")
        #expect(report.remaining == 20 - report.removed.count)
        let order = report.removed.map { Int(($0.path as NSString).lastPathComponent.dropLast(4)) ?? -1 }
        #expect(order == Array(0..<report.removed.count), "oldest first")
    }

    @Test("a clean stops deleting at its time limit, reports the unfinished tasks, and measures what it freed")
    func cleanStops() async throws {
        let fixture = try TestContainer()
        for index in 0..<30 { try fixture.file("Library/Caches/a/\(index)", bytes: 4_096) }
        try fixture.file("Library/Caches/b/file", bytes: 4_096)
        let cleaner = CacheCleaner(container: fixture.container, timeLimitClock: TickingClock(step: .seconds(1)))
        let manifest = CleanManifest(tasks: [
            .path("Library/Caches/a", entries: []), .path("Library/Caches/b", entries: []),
        ])
        let report = try await cleaner.clean(manifest, timeLimit: .seconds(10))
        #expect(report.reachedTimeLimit)
        #expect(report.tasks.map(\.reachedTimeLimit) == [true, true])
        #expect(report.tasks[0].entriesRemoved > 0 && report.tasks[0].entriesRemoved < 30)
        #expect(report.tasks[1].entriesRemoved == 0 && fixture.exists("Library/Caches/b/file"))
        let removedBytes = Int64(4_096 * report.tasks[0].entriesRemoved)
        #expect(report.tasks[0].bytesFreed.rawValue >= removedBytes, "measured after, as without a limit")
        #expect(report.isComplete, "reaching the limit is not a failure")
    }

    @Test("the storage monitor stops between members at its time limit and says so")
    func monitorStops() async throws {
        let fixture = try TestContainer()
        let volume = StorageMonitorTests.FakeVolume()
        volume.available.withLock { $0 = 50 * .megabyte }
        let caches = (0..<10).map { _ in StorageMonitorTests.CountingCache() }
        var configuration = StorageMonitor.Configuration()
        configuration.waitClock = TickingClock(step: .seconds(1))
        configuration.timeLimit = .seconds(8)
        let monitor = StorageMonitor(
            purgeable: PurgeableDirectories(container: fixture.container),
            caches: caches,
            configuration: configuration,
            capacity: { volume.read() }
        )
        let report = try #require(try await monitor.check())
        #expect(report.reachedTimeLimit)
        let asked = caches.map { $0.purges.load(ordering: .relaxed) }.reduce(0, +)
        #expect(asked > 0 && asked < 10, "\(asked) members asked")

        let unlimited = StorageMonitor(purgeable: nil, caches: caches, capacity: { volume.read() })
        #expect(try await unlimited.check()?.reachedTimeLimit == false)
    }

    @Test("the storage monitor's time limit bounds the marked items' removal on its own waitClock")
    func monitorLimitsMarkedItems() async throws {
        let fixture = try TestContainer()
        for index in 0..<20 { try fixture.file("Documents/exports/\(index).zip", modified: longAgo + Double(index)) }
        do {
            for index in 0..<20 { try Marks.setPurgeable(true, at: fixture.url("Documents/exports/\(index).zip")) }
        } catch StowageError.Code.unsupported {
            return
        }
        let volume = StorageMonitorTests.FakeVolume()
        volume.available.withLock { $0 = 50 * .megabyte }
        var configuration = StorageMonitor.Configuration()
        configuration.waitClock = TickingClock(step: .seconds(1))
        configuration.timeLimit = .seconds(40)
        let monitor = StorageMonitor(
            purgeable: PurgeableDirectories(container: fixture.container),
            configuration: configuration,
            capacity: { volume.read() }
        )
        // The monitor made its marked items with the default ContinuousClock: what was left of
        // 40 ticks became 40 real seconds, and every item went.
        let report = try #require(try await monitor.check())
        let marked = try #require(report.markedItems)
        #expect(marked.reachedTimeLimit && report.reachedTimeLimit)
        #expect(marked.removed.count < 20, "\(marked.removed.count) removed")
    }

    @Test("a clean report's JSON says whether the time limit stopped it, as its tasks do")
    func cleanReportJSON() throws {
        var task = CleanReport.TaskResult(index: 1, task: "Path 'Library/Caches/a'")
        task.reachedTimeLimit = true
        let data = try JSONEncoder().encode(CleanReport(tasks: [task], isDryRun: false))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["reachedTimeLimit"] as? Bool == true, "\(object.keys.sorted())")
    }

    @Test(
        "a time limit that is zero, negative or beyond 2^31 s is refused with a clear error",
        arguments: [Duration.zero, .seconds(-1), .seconds(Int64(Int32.max) + 1), .seconds(Int64.max)]
    )
    func invalidLimits(limit: Duration) async throws {
        let fixture = try TestContainer()
        func expectRefused(_ body: () async throws -> Void) async {
            await #expect {
                try await body()
            } throws: { error in
                (error as? StowageError)?.code == .invalidArgument
                    && (error as? StowageError)?.message.contains("time limit") == true
            }
        }
        let purgeable = PurgeableDirectories(container: fixture.container)
        await expectRefused { _ = try await purgeable.sweep(timeLimit: limit) }
        await expectRefused { _ = try await purgeable.resetAll(timeLimit: limit) }
        await expectRefused {
            _ = try await MarkedItems(container: fixture.container).purge(atLeast: nil, timeLimit: limit)
        }
        await expectRefused {
            _ = try await CacheCleaner(container: fixture.container).clean(CleanManifest(tasks: []), timeLimit: limit)
        }
        let volume = StorageMonitorTests.FakeVolume()
        let monitor = StorageMonitor(purgeable: nil, capacity: { volume.read() })
        await expectRefused { _ = try await monitor.check(timeLimit: limit) }
    }
}

/// A clock that moves a second per read, as ``TickingClock``, and runs `action` at read `at`: for
/// something to happen at a chosen check of a time limit.
private final class ActingClock: Clock, Sendable {
    typealias Instant = SteppedClock.Instant

    private let origin = SteppedClock().now
    private let count = Mutex(0)
    private let at: Int
    private let action: @Sendable () -> Void

    init(at: Int, _ action: @escaping @Sendable () -> Void) {
        self.at = at
        self.action = action
    }

    var reads: Int { count.withLock { $0 } }

    var now: Instant {
        let read = count.withLock {
            $0 += 1
            return $0
        }
        if read == at { action() }
        return origin.advanced(by: .seconds(read))
    }

    var minimumResolution: Duration { .seconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
    }
}
