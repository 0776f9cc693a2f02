import Dispatch
import Foundation
import GRDB
import Logging
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

/// The disk cache's maintenance lane: one serial queue for the trims, access-time batches,
/// staged-write commits and checkpoints, with coalescing, timers and a drain that `close()` uses.
// Serialized, and the cache test's gate closed from its own thread: its semaphore waits would
// otherwise hold cooperative threads that a loaded run's other suites need.
@Suite("DiskCache maintenance lane", .serialized, .timeLimit(.minutes(5)))
struct DiskCacheMaintenanceTests {
    /// What the jobs of a test did, in order.
    private final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func record(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// A job that holds the lane until ``open()``: what is queued behind it stays queued.
    private final class Gate: Sendable {
        private let started = DispatchSemaphore(value: 0)
        private let released = DispatchSemaphore(value: 0)

        /// Queues the gate as `job` and returns once it is running.
        func close(_ lane: DiskCacheMaintenance, as job: DiskCacheMaintenance.Job = .checkpoint) {
            let started = started
            let released = released
            let queued = lane.schedule(job) {
                started.signal()
                released.wait()
            }
            #expect(queued)
            started.wait()
        }

        func open() { released.signal() }
    }

    private static func lane(logger: Logger = Logger(label: "test")) -> DiskCacheMaintenance {
        DiskCacheMaintenance(name: "test", logger: logger)
    }

    /// The blocking `run(_:)`, which an async test would not pick by itself.
    private static func runBlocking(_ lane: DiskCacheMaintenance, _ work: () -> Void) -> Void? {
        lane.run(work)
    }

    // MARK: - Coalescing

    @Test("a job already queued is not queued again; once it has started, it can be")
    func coalescing() {
        let lane = Self.lane()
        let journal = Journal()
        let gate = Gate()
        gate.close(lane)
        // Given a trim queued behind the gate
        #expect(lane.schedule(.trim) { journal.record("trim 1") })
        // When it is asked for twice more
        #expect(!lane.schedule(.trim) { journal.record("trim 2") })
        #expect(!lane.schedule(.trim) { journal.record("trim 3") })
        gate.open()
        _ = lane.run {}
        // Then it ran once
        #expect(journal.all == ["trim 1"])
        // And a running trim does not stop the next request
        gate.close(lane, as: .trim)
        #expect(lane.schedule(.trim) { journal.record("trim 4") })
        gate.open()
        _ = lane.run {}
        #expect(journal.all == ["trim 1", "trim 4"])
    }

    // MARK: - Ordering

    @Test("jobs run one at a time, in the order they were queued, before work run after them")
    func ordering() {
        let lane = Self.lane()
        let journal = Journal()
        let running = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        let gate = Gate()
        gate.close(lane)
        for job in [DiskCacheMaintenance.Job.stagedFlush, .trim, .accessLogFlush] {
            lane.schedule(job) {
                if running.add(1, ordering: .acquiringAndReleasing).newValue > 1 {
                    overlapped.store(true, ordering: .relaxed)
                }
                usleep(2_000)
                journal.record("\(job)")
                running.subtract(1, ordering: .acquiringAndReleasing)
            }
        }
        gate.open()
        #expect(lane.run { journal.record("run") } != nil)
        #expect(journal.all == ["staged-write commit", "background trim", "access-time flush", "run"])
        let didOverlap = overlapped.load(ordering: .relaxed)
        #expect(!didOverlap)
    }

    // MARK: - Failures

    @Test("a job that throws is logged at its level, and the lane goes on")
    func throwingJob() throws {
        let records = RecordingLogHandler.Records()
        let lane = Self.lane(logger: Logger(label: "test", factory: { _ in RecordingLogHandler(records: records) }))
        let journal = Journal()
        struct Broken: Error, CustomStringConvertible { var description: String { "the disk said no" } }
        lane.schedule(.trim) { throw Broken() }
        lane.schedule(.accessLogFlush) { journal.record("after") }
        #expect(lane.run { journal.record("run") } != nil)
        #expect(journal.all == ["after", "run"])
        let logged = try #require(records.all.first)
        #expect(logged.level == .error)
        #expect(logged.message.contains("background trim failed"))
        #expect(logged.message.contains("the disk said no"))
        #expect(logged.metadata["cache"] == "test")
    }

    // MARK: - Drain

    @Test("drain() waits for the queued jobs; afterwards nothing is queued and nothing runs")
    func drainRunsQueuedThenNothing() async throws {
        let lane = Self.lane()
        let journal = Journal()
        let gate = Gate()
        gate.close(lane)
        lane.schedule(.trim) { journal.record("queued before the drain") }
        let drained = Task { try await onOwnThread { lane.drain() } }
        try await eventually { lane.isDraining }
        // Asked for while the drain waits: refused.
        #expect(!lane.schedule(.accessLogFlush) { journal.record("queued during the drain") })
        gate.open()
        try await drained.value
        #expect(journal.all == ["queued before the drain"])
        // After the drain: refused, and run() does not run its work.
        #expect(!lane.schedule(.stagedFlush) { journal.record("queued after the drain") })
        #expect(Self.runBlocking(lane) { journal.record("run after the drain") } == nil)
        #expect(try await lane.run { journal.record("async run after the drain") } == nil)
        lane.drain()  // again: nothing to wait for
        #expect(journal.all == ["queued before the drain"])
    }

    // MARK: - Timers

    @Test("a timer queues its job when its delay has passed on its clock; one timer per job")
    func timers() async throws {
        let lane = Self.lane()
        let journal = Journal()
        let clock = SteppedClock()
        lane.schedule(.stagedFlush, after: .seconds(10), on: clock) { journal.record("first") }
        try await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(5))
        // A second request while the first timer is pending: the first one's job covers it.
        lane.schedule(.stagedFlush, after: .seconds(10), on: clock) { journal.record("second") }
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(5))
        try await eventually { journal.all == ["first"] }
        // The timer has fired: a new request starts a new one.
        lane.schedule(.stagedFlush, after: .seconds(10), on: clock) { journal.record("third") }
        try await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(10))
        try await eventually { journal.all == ["first", "third"] }
    }

    @Test("drain() cancels a pending timer: its job never runs")
    func drainCancelsTimers() async throws {
        let lane = Self.lane()
        let journal = Journal()
        let clock = SteppedClock()
        lane.schedule(.stagedFlush, after: .seconds(10), on: clock) { journal.record("timer") }
        try await eventually { clock.sleeperCount == 1 }
        try await onOwnThread { lane.drain() }
        try await eventually { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(60))
        _ = try await lane.run {}
        #expect(journal.all.isEmpty)
        lane.schedule(.stagedFlush, after: .seconds(1), on: clock) { journal.record("after the drain") }
        #expect(clock.sleeperCount == 0)
    }

    // MARK: - The cache's close()

    @Test("close() lets a queued background trim finish, cancels the commit timer, and ends the lane")
    func closeDrainsTheCachesLane() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache", directoryHint: .isDirectory)
        let clock = SteppedClock()
        var configuration = DiskCache.Configuration(name: "test")
        configuration.countLimit = 10
        configuration.durability = .deferred(maximumDelay: .seconds(60))
        configuration.deferredCommitClock = clock
        let cache = try DiskCache(directory: directory, configuration: configuration)
        // Given the lane held by a job, a staged write's timer pending, and 12 entries committed
        // (a background trim to half the count limit queued behind the gate)
        let gate = Gate()
        let maintenance = cache.maintenance
        try await onOwnThread { gate.close(maintenance) }
        for index in 0..<12 { try await cache.setData(Data("v\(index)".utf8), forKey: "k\(index)") }
        try await eventually { clock.sleeperCount == 1 }
        try await cache.flush()
        // When the cache closes
        let closed = Task { try await onOwnThread { try cache.close() } }
        try await eventually { cache.maintenance.isDraining }
        gate.open()
        try await closed.value
        // Then the trim ran before close() returned, the timer is gone, and the lane refuses work
        try await eventually { clock.sleeperCount == 0 }
        let index = try DatabaseQueue(path: directory.path(percentEncoded: false) + "index.sqlite")
        let count = try await index.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM entry") ?? -1
        }
        #expect(count == 5, "trimmed to trimRatio (0.5) of the count limit")
        #expect(!cache.maintenance.schedule(.trim) { Issue.record("a job ran after close()") })
        await #expect(throws: StowageError.self) { try await cache.trim() }
    }
}
