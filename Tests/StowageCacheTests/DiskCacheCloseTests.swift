import Foundation
import GRDB
import Logging
import ServiceLifecycle
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

/// `DiskCache.close()` ends a cache's life: it commits what is pending (staged writes, access
/// times) and closes the index, so that `deinit` does no I/O; afterwards every operation throws
/// `.closed`. The hybrid cache closes its disk level when its service group shuts down.
@Suite("DiskCache close")
struct DiskCacheCloseTests {
    private static func configuration(clock: ManualClock? = nil) -> DiskCache.Configuration {
        var configuration = DiskCache.Configuration(name: "test")
        // Only close() (or a flush) commits the staged writes: the timer's clock never moves.
        configuration.durability = .deferred(maximumDelay: .seconds(60))
        configuration.deferredCommitClock = SteppedClock()
        if let clock { configuration.clock = clock.cacheClock }
        return configuration
    }

    private static func directory(_ scratch: TemporaryDirectory) -> URL {
        scratch.url.appending(path: "cache", directoryHint: .isDirectory)
    }

    @Test("what was written and read before close() is in the index a new handle opens", arguments: [false, true])
    func closeCommitsPendingWork(async: Bool) async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock(startingAt: Date(timeIntervalSince1970: 1_000_000))
        let cache = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration(clock: clock))
        try await cache.setData(Data("inline".utf8), forKey: "small")
        try await cache.setData(Data(repeating: 7, count: 100_000), forKey: "large")
        try await cache.setData(Data("read".utf8), forKey: "read", timeToLive: nil)
        try await cache.flush()
        clock.advance(by: .seconds(3_600))
        #expect(try await cache.data(forKey: "read") == Data("read".utf8))  // an access time, buffered
        try await cache.setData(Data("staged".utf8), forKey: "staged")
        if async { try await cache.close() } else { try closeBlocking(cache) }
        #expect(cache.isClosed)

        let index = try DatabaseQueue(path: Self.directory(scratch).path(percentEncoded: false) + "/index.sqlite")
        let accessed = try await index.read { db in
            try Double.fetchOne(db, sql: "SELECT accessed FROM entry WHERE key = 'read'")
        }
        let written = try #require(accessed)
        #expect(abs(written - (1_000_000 + 3_600)) < 0.01, "the buffered access time was written: \(written)")

        let reopened = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration())
        #expect(try await reopened.data(forKey: "small") == Data("inline".utf8))
        #expect(try await reopened.data(forKey: "large") == Data(repeating: 7, count: 100_000))
        #expect(try await reopened.data(forKey: "staged") == Data("staged".utf8))
        try await reopened.close()
    }

    @Test("a cache released without close() does no I/O: its staged writes are lost, as in a crash")
    func releaseWithoutCloseDropsStagedWrites() throws {
        let scratch = try TemporaryDirectory()
        do {
            let cache = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration())
            try cache.setData(Data("committed".utf8), forKey: "committed")
            try cache.flush()
            try cache.setData(Data("staged".utf8), forKey: "staged")
        }
        let reopened = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration())
        #expect(try reopened.data(forKey: "committed") == Data("committed".utf8))
        #expect(try reopened.data(forKey: "staged") == nil)
        try reopened.close()
    }

    @Test("every operation after close() throws .closed; closing again does nothing")
    func operationsAfterClose() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: Self.directory(scratch))
        try await cache.setData(Data("v".utf8), forKey: "k")
        try await cache.close()
        try await cache.close()
        try await cache.close()

        func expectClosed(_ name: String, _ body: () throws -> Void) {
            let error = #expect(throws: StowageError.self, "\(name)") { try body() }
            #expect(error?.code == .closed, "\(name): \(String(describing: error))")
            #expect(error?.message.contains("closed") == true, "\(name)")
        }
        expectClosed("data") { _ = try cache.data(forKey: "k") }
        expectClosed("setData") { try cache.setData(Data("w".utf8), forKey: "k2") }
        expectClosed("setData large") { try cache.setData(Data(count: 100_000), forKey: "k3") }
        expectClosed("contains") { _ = try cache.contains(key: "k") }
        expectClosed("removeData") { try cache.removeData(forKey: "k") }
        expectClosed("removeAll") { try cache.removeAll() }
        expectClosed("usage") { _ = try cache.usage() }
        expectClosed("flushAccessLog") { try cache.flushAccessLog() }
        let error = await #expect(throws: StowageError.self) { _ = try await cache.data(forKey: "k") }
        #expect(error?.code == .closed)
        // Nothing was written after the close: no file of the refused large value is left.
        let temporaries = try FileManager.default.contentsOfDirectory(
            atPath: Self.directory(scratch).path(percentEncoded: false) + "/tmp"
        )
        #expect(temporaries.isEmpty)

        let reopened = try DiskCache(directory: Self.directory(scratch))
        #expect(try await reopened.data(forKey: "k") == Data("v".utf8))
        #expect(try await reopened.data(forKey: "k2") == nil)
        try await reopened.close()
    }

    // MARK: - Racing close()

    @Test("a deferred write racing close() either throws .closed or is in the index a new handle opens")
    func deferredWritesRacingClose() async throws {
        for round in 0..<12 {
            let scratch = try TemporaryDirectory()
            defer { withExtendedLifetime(scratch) {} }
            let directory = Self.directory(scratch)
            let cache = try DiskCache(directory: directory, configuration: Self.configuration())
            let acknowledged = AcknowledgedKeys()
            // Two writers of file-sized values (the file write widens the window between the
            // write's open check and its staging) until the cache refuses them, or 500 each
            // when this task is slow to close it (under load): well under the staging's limit.
            let writers = (0..<2).map { writer in
                Task {
                    try await onOwnThread {
                        for index in 0..<500 {
                            let key = "round\(round)-writer\(writer)-\(index)"
                            do {
                                try cache.setData(Data(repeating: UInt8(index % 251), count: 20_000), forKey: key)
                            } catch let error as StowageError where error.code == .closed {
                                return
                            }
                            acknowledged.keys.withLock { $0.append(key) }
                        }
                    }
                }
            }
            try await eventually { acknowledged.keys.withLock { $0.count } >= 4 }
            try await cache.close()
            for writer in writers { try await writer.value }

            let reopened = try DiskCache(directory: directory, configuration: Self.configuration())
            let keys = acknowledged.keys.withLock { $0 }
            let lost = try keys.filter { try reopened.data(forKey: $0) == nil }
            #expect(lost.isEmpty, "round \(round): \(lost.count) of \(keys.count) acknowledged writes lost: \(lost)")
            try await reopened.close()
            if !lost.isEmpty { break }
        }
    }

    @Test("close() from many tasks at once: each returns only once the staged writes are in the index")
    func concurrentCloses() async throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let cache = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration())
        let count = 4_000  // under the staging's own limit: close() commits them all
        for index in 0..<count { try await cache.setData(Data("value \(index)".utf8), forKey: "k\(index)") }
        let indexPath = Self.directory(scratch).path(percentEncoded: false) + "/index.sqlite"
        let seen = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await cache.close()
                    // What another process opening the cache now would find. The eight
                    // connections open at once, and the first one recovers the WAL under a lock:
                    // the others wait for it, as a cache handle's own pool does.
                    var waiting = Configuration()
                    waiting.busyMode = .timeout(30)
                    let index = try DatabaseQueue(path: indexPath, configuration: waiting)
                    return try await index.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM entry") ?? 0 }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(seen == Array(repeating: count, count: 8), "rows seen after each close() returned: \(seen)")
    }

    @Test("close() of a cache its staged writes take over its size limit logs no error")
    func closeOverLimitLogsNoError() throws {
        let scratch = try TemporaryDirectory()
        let records = RecordingLogHandler.Records()
        var configuration = Self.configuration()
        configuration.sizeLimit = ByteCount(1_000)
        configuration.logger = Logger(label: "test") { _ in RecordingLogHandler(records: records) }
        let cache = try DiskCache(directory: Self.directory(scratch), configuration: configuration)
        for index in 0..<20 { try cache.setData(Data(repeating: 1, count: 200), forKey: "k\(index)") }
        // The commit close() makes is over the limit and schedules a trim, which runs closed.
        try cache.close()
        let errors = records.all.filter { $0.level >= .error }
        #expect(errors.isEmpty, "\(errors.map(\.message))")
    }

    @Test("removeAll() after close() throws .closed without advancing the generation other handles follow")
    func removeAllAfterCloseLeavesGeneration() throws {
        let scratch = try TemporaryDirectory()
        let other = try DiskCache(directory: Self.directory(scratch))
        let cache = try DiskCache(directory: Self.directory(scratch))
        try other.setData(Data("v".utf8), forKey: "k")
        let generation = other.storeGeneration.value
        try cache.close()
        let error = #expect(throws: StowageError.self) { try cache.removeAll() }
        #expect(error?.code == .closed, "\(String(describing: error))")
        #expect(other.storeGeneration.value == generation, "the closed handle cleared the other handles' memory tiers")
        #expect(try other.data(forKey: "k") == Data("v".utf8))
        try other.close()
    }

    @Test("flush(), and reads and removals of a key with NUL, throw .closed after close() too")
    func remainingOperationsAfterClose() async throws {
        for configuration in [DiskCache.Configuration(name: "test"), Self.configuration()] {
            let scratch = try TemporaryDirectory()
            let cache = try DiskCache(directory: Self.directory(scratch), configuration: configuration)
            try await cache.close()
            func expectClosed(_ name: String, _ body: () throws -> Void) {
                let error = #expect(throws: StowageError.self, "\(name)") { try body() }
                #expect(error?.code == .closed, "\(name): \(String(describing: error))")
            }
            expectClosed("flush") { try cache.flush() }
            expectClosed("data of a NUL key") { _ = try cache.data(forKey: "a\0b") }
            expectClosed("contains a NUL key") { _ = try cache.contains(key: "a\0b") }
            expectClosed("removeData of a NUL key") { try cache.removeData(forKey: "a\0b") }
            let error = await #expect(throws: StowageError.self) { try await cache.flush() }
            #expect(error?.code == .closed)
        }
    }

    @Test("a streaming write begun after close() throws .closed and creates no file")
    func streamingWriteBegunAfterClose() throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: Self.directory(scratch))
        try cache.close()
        let error = #expect(throws: StowageError.self) { _ = try cache.beginStreamingWrite(forKey: "k") }
        #expect(error?.code == .closed, "\(String(describing: error))")
        let temporaries = try FileManager.default.contentsOfDirectory(
            atPath: Self.directory(scratch).path(percentEncoded: false) + "/tmp"
        )
        #expect(temporaries.isEmpty, "\(temporaries)")
    }

    @Test("a streaming write begun before close() and used after throws .closed and puts nothing in data/")
    func streamingWriteUsedAfterClose() throws {
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let directory = Self.directory(scratch)
        let cache = try DiskCache(directory: directory)
        let writer = try cache.beginStreamingWrite(forKey: "k")
        try Array(repeating: UInt8(1), count: 100_000).withUnsafeBytes { try writer.write($0) }
        try cache.close()
        // Watch data/ for the moment the file would pass through it.
        let data = directory.path(percentEncoded: false) + "/data"
        let before = try FileManager.default.subpathsOfDirectory(atPath: data)
        let writeError = #expect(throws: StowageError.self) {
            try Array(repeating: UInt8(2), count: 10).withUnsafeBytes { try writer.write($0) }
        }
        #expect(writeError?.code == .closed, "\(String(describing: writeError))")
        let commitError = #expect(throws: StowageError.self) { try writer.commit() }
        #expect(commitError?.code == .closed, "\(String(describing: commitError))")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: data) == before)
        let temporaries = try FileManager.default.contentsOfDirectory(
            atPath: directory.path(percentEncoded: false) + "/tmp"
        )
        #expect(temporaries.isEmpty, "the abandoned value's temporary is removed: \(temporaries)")
        let reopened = try DiskCache(directory: directory)
        #expect(try reopened.data(forKey: "k") == nil)
        try reopened.close()
    }

    @Test("a hybrid cache's run closes its disk level when the service group shuts down gracefully")
    func hybridRunClosesOnGracefulShutdown() async throws {
        let scratch = try TemporaryDirectory()
        let disk = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration())
        let cache = HybridCache(memory: try MemoryCache(), disk: disk, serializer: StringSerializer())
        let group = ServiceGroup(configuration: .init(services: [cache], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        // A shutdown asked for before the group has started its services still runs them and
        // shuts them down gracefully (ServiceGroup.triggerGracefulShutdown), so no wait is needed.
        try await cache.setValue("staged", forKey: "k")
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(disk.isClosed)
        let reopened = try DiskCache(directory: Self.directory(scratch), configuration: Self.configuration())
        #expect(try await reopened.data(forKey: "k") != nil, "the staged write was committed by the close")
        try await reopened.close()
    }

    @Test("a hybrid cache whose run is cancelled stays open")
    func hybridRunCancelledStaysOpen() async throws {
        let scratch = try TemporaryDirectory()
        let cache = HybridCache(
            memory: try MemoryCache(),
            disk: try DiskCache(directory: Self.directory(scratch)),
            serializer: StringSerializer()
        )
        let running = Task { try await cache.run() }
        // Cancelled before or after run() began waiting: either way it returns and leaves the
        // cache open.
        running.cancel()
        try await running.value
        #expect(!cache.disk.isClosed)
        try await cache.close()
        #expect(cache.disk.isClosed)
    }
}

/// The keys whose writes returned, shared with the writer threads.
private final class AcknowledgedKeys: Sendable {
    let keys = Mutex<[String]>([])
}

/// The blocking `close()`, called from a synchronous context.
private func closeBlocking(_ cache: DiskCache) throws { try cache.close() }
