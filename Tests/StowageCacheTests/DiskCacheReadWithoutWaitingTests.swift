import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// `DiskCache.indexedValueWithoutWaiting(forKey:)`, the read a server's event loop makes: a sound
/// inline value or nothing, and nothing counted or written for what it leaves to the ordinary read.
@Suite("DiskCache read without waiting")
struct DiskCacheReadWithoutWaitingTests {
    @Test(
        "an inline value is read and counted as a hit; a miss, a file value and an expired value are nil and uncounted"
    )
    func answersOnlyWhatTheIndexHolds() throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        var configuration = DiskCache.Configuration(name: "test")
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        let small = Data("inline".utf8)
        let large = Data(repeating: 7, count: configuration.inlineThreshold + 1)
        try cache.setData(small, forKey: "small")
        try cache.setData(large, forKey: "large")
        try cache.setData(small, forKey: "brief", timeToLive: .seconds(10))

        #expect(cache.indexedValueWithoutWaiting(forKey: "small")?.data == small)
        #expect(cache.indexedValueWithoutWaiting(forKey: "large") == nil, "a file read is not made")
        #expect(cache.indexedValueWithoutWaiting(forKey: "missing") == nil)
        #expect(cache.indexedValueWithoutWaiting(forKey: "nul\u{0}key") == nil)
        clock.advance(by: .seconds(11))
        #expect(cache.indexedValueWithoutWaiting(forKey: "brief") == nil)
        #expect(cache.statistics.hits == 1)
        #expect(cache.statistics.misses == 0, "left to the ordinary read, which counts it")
        // The ordinary read answers what it left.
        #expect(try cache.data(forKey: "large") == large)
        #expect(try cache.data(forKey: "brief") == nil)
        try cache.close()
        #expect(cache.indexedValueWithoutWaiting(forKey: "small") == nil, "a closed cache answers nothing")
    }

    @Test("an inline value garbled in place is nil, left for the ordinary read to count and remove")
    func garbledInlineIsLeft() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let value = Data((0..<200).map { UInt8($0) })
        try cache.setData(value, forKey: "k")
        try cache.flush()
        try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).write { db in
            var bytes = [UInt8](value)
            bytes[50] ^= 0x01
            try db.execute(sql: "UPDATE entry SET inline = ? WHERE key = ?", arguments: [Data(bytes), "k"])
        }
        #expect(cache.indexedValueWithoutWaiting(forKey: "k") == nil)
        #expect(cache.statistics.damaged == 0)
        #expect(try cache.data(forKey: "k") == nil)
        #expect(cache.statistics.damaged == 1)
        #expect(try cache.contains(key: "k") == false)
        try cache.close()
    }

    @Test("a value removed by another handle, or cleared with the whole cache, is not read")
    func removalsByAnotherHandleAreSeen() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        try await cache.setData(Data("a".utf8), forKey: "a")
        try await cache.setData(Data("b".utf8), forKey: "b")
        try await cache.flush()
        let other = try DiskCache(directory: directory)
        #expect(try await other.removeData(forKey: "a"))
        #expect(cache.indexedValueWithoutWaiting(forKey: "a") == nil)
        #expect(cache.indexedValueWithoutWaiting(forKey: "b")?.data == Data("b".utf8))
        _ = try await other.removeAll()
        #expect(cache.indexedValueWithoutWaiting(forKey: "b") == nil)
        try await other.close()
        try await cache.close()
    }

    @Test(
        "a log another process holds locked (a WAL recovery) makes the read nil at once, not a wait of the busy timeout"
    )
    func anotherProcessesRecoveryIsNotWaitedFor() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let value = Data("v".utf8)
        try await cache.setData(value, forKey: "k")
        try await cache.flush()
        #expect(cache.indexedValueWithoutWaiting(forKey: "k")?.data == value)
        // Given: another process holds what a connection recovering the log holds.
        let holder = try WALRecoveryLockHolder(shm: directory.appending(path: "index.sqlite-shm").path)
        // When: the event loop's read meets it.
        let started = ContinuousClock.now
        let read = cache.indexedValueWithoutWaiting(forKey: "k")
        let waited = started.duration(to: .now)
        try holder.release()
        // Then: it answered nothing, well before the readers' 30 s busy timeout (it waited for
        // all of it before), and the ordinary read answers once the lock is gone.
        #expect(read == nil)
        #expect(waited < .seconds(10), "waited \(waited) on the other process's lock")
        #expect(cache.statistics.hits == 1, "the answer left to the ordinary read is not counted")
        #expect(try await cache.data(forKey: "k") == value)
        #expect(cache.indexedValueWithoutWaiting(forKey: "k")?.data == value, "its connection still reads")
        try await cache.close()
    }
}

/// Another process in the middle of a WAL recovery, as one is after a crash left the log's index
/// torn: it holds the locks a recovery takes on the index's `-shm` file (bytes 121–127: the
/// checkpointer, recovery and read-mark locks, `UNIX_SHM_BASE` 120 + 1…7), through `fcntl` as
/// SQLite's unix VFS takes them (POSIX locks of this process would not conflict with its own
/// connections), and the first copy of the log index's header is garbled, so a reader finds it
/// bad, tries to recover it itself and meets the locks (`SQLITE_BUSY_RECOVERY`, which SQLite's
/// busy handler waits out). A reader recovers the header once the holder has gone.
private final class WALRecoveryLockHolder {
    private let process = ChildProcess()
    private let input = childPipe()

    init(shm path: String) throws {
        let script = """
            import fcntl, os, sys
            fd = os.open(sys.argv[1], os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX, 7, 121, os.SEEK_SET)
            os.pwrite(fd, b"\\xff" * 48, 0)
            print("locked", flush=True)
            sys.stdin.read()
            """
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, path]
        let output = childPipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw TestFailure("the lock holder exited before it took the lock") }
            line.append(chunk)
        }
    }

    /// Ends the holder, and with it its locks.
    func release() throws {
        try input.fileHandleForWriting.close()
        _ = process.waitForExitReliably()
    }
}
