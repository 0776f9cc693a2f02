import Dispatch
import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// The async write's wait for its group commit (`DiskCacheCommitQueue.commit(_:) async`): a
/// task waits suspended, not on a parked thread, and threads and tasks share one commit queue.
@Suite("Disk cache writes waiting for their group commit")
struct DiskCacheCommitWaitTests {
    @Test("more writes than there are blocking lanes wait for a locked index, and another cache still writes")
    func waitingWritesHoldNoLane() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "locked")
        let locked = try DiskCache(directory: directory)
        let other = try DiskCache(directory: scratch.url.appending(path: "other"))
        // Given: another connection holds the index's write lock.
        let lock = try await IndexWriteLock(index: directory.appending(path: "index.sqlite").path)
        // When: more writers than the blocking lanes wait for their commit behind it.
        let writers = BlockingWork.limit + 16
        let writes = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<writers {
                    group.addTask { try await locked.setData(Data("v\(index)".utf8), forKey: "k\(index)") }
                }
                try await group.waitForAll()
            }
        }
        // Then: all of them wait for their commit (the first batch blocked on the lock), none
        // on a lane: with a lane parked each, the writers past the 64th never got one to queue from.
        do {
            try await eventually { locked.commits.waitingCount == writers }
        } catch {
            lock.release()
            throw error
        }
        // And another cache's write takes a lane and commits meanwhile.
        try await other.setData(Data("x".utf8), forKey: "x")
        lock.release()
        try await writes.value
        for index in [0, writers / 2, writers - 1] {
            #expect(try await locked.data(forKey: "k\(index)") == Data("v\(index)".utf8))
        }
        #expect(try await locked.usage().count == writers)
        try await locked.close()
        try await other.close()
    }

    @Test("threads and tasks writing at once share the group commit: every write committed, replaced files removed")
    func threadsAndTasksShareTheQueue() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"))
        let rounds = 30
        @Sendable func value(_ key: String, _ round: Int) -> Data {
            // Files, not inline, so each rewrite replaces a file the commit's caller removes.
            Data(repeating: UInt8(truncatingIfNeeded: round), count: 20_000) + Data(key.utf8)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    try await onOwnThread {
                        for round in 0..<rounds { try cache.setData(value("s\(thread)", round), forKey: "s\(thread)") }
                    }
                }
            }
            for task in 0..<16 {
                group.addTask {
                    for round in 0..<rounds { try await cache.setData(value("a\(task)", round), forKey: "a\(task)") }
                }
            }
            try await group.waitForAll()
        }
        for key in (0..<4).map({ "s\($0)" }) + (0..<16).map({ "a\($0)" }) {
            #expect(try await cache.data(forKey: key) == value(key, rounds - 1), "\(key)")
        }
        #expect(try await cache.usage().count == 20)
        #expect(scratch.dataFiles().count == 20, "one file per key: \(scratch.dataFiles().count)")
        try await cache.close()
    }
}
