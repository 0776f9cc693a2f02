import Foundation
import GRDB
import StowageCache
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Real processes: one killed with SIGKILL mid-write, two writing to one directory at once.
@Suite("DiskCache reliability", .serialized)
struct DiskCacheReliabilityTests {
    @Test("kill -9 during 10,000 writes: every value reads back whole or not at all; index and files agree")
    func killDuringWrites() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.path + "/cache"
        let (present, wrong) = try await killMidWrite("write", directory: directory, after: "wrote 1500")
        #expect(wrong == 0, "values that read back wrong")
        #expect(present >= 1500, "values present")
        #expect(try indexedFiles(directory) == scratch.dataFiles(), "the index and data/ name the same files")
        let temporary = try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")
        #expect(temporary.isEmpty)
    }

    @Test(
        "kill -9 during 10,000 writes from 16 tasks waiting for their group commit: every value whole or absent"
    )
    func killDuringAsyncWrites() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.path + "/cache"
        let (present, wrong) = try await killMidWrite("write-async", directory: directory, after: "wrote 1500")
        #expect(wrong == 0, "values that read back wrong")
        #expect(present >= 1500, "every write that returned is there: \(present)")
        #expect(try indexedFiles(directory) == scratch.dataFiles(), "the index and data/ name the same files")
        let temporary = try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")
        #expect(temporary.isEmpty)
    }

    @Test("kill -9 during 10,000 deferred writes: what was lost is missing, nothing reads back wrong")
    func killDuringDeferredWrites() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.path + "/cache"
        let (present, wrong) = try await killMidWrite("write-deferred", directory: directory, after: "wrote 3000")
        #expect(wrong == 0, "values that read back wrong")
        // Batches commit every 10 ms; the first thousands were written long before the kill.
        #expect(present >= 1000, "values present")
        #expect(try indexedFiles(directory) == scratch.dataFiles(), "the index and data/ name the same files")
    }

    /// Starts the worker writing keys 0..<10,000 with `command`, kills it with SIGKILL once it
    /// printed `marker`, then has a new process verify every key.
    ///
    /// - Returns: How many keys read back right, and how many read back wrong.
    private func killMidWrite(
        _ command: String,
        directory: String,
        after marker: String
    ) async throws -> (present: Int, wrong: Int) {
        let (process, output) = try CacheWorker.start([command, directory, "0", "10000"])
        _ = try await kill(process, once: output, contains: marker)
        #expect(process.terminationReason == .uncaughtSignal)
        // Reopening collects what the crash left; every key reads back right or is missing.
        let verdict = try await CacheWorker.run(["verify", directory, "0", "10000"])
        let numbers = verdict.split(separator: " ").compactMap { Int($0) }
        try #require(numbers.count == 3, "worker said: \(verdict)")
        return (numbers[0], numbers[2])
    }

    /// The value files the index names.
    private func indexedFiles(_ directory: String) throws -> Set<String> {
        try DatabaseQueue(path: directory + "/index.sqlite").read { db in
            Set(try String.fetchAll(db, sql: "SELECT file FROM entry WHERE file IS NOT NULL"))
        }
    }

    @Test("deferred writes that end with a flush are all there for the next process")
    func deferredWritesFlushed() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.path + "/cache"
        #expect(try await CacheWorker.run(["write-deferred", directory, "0", "3000"]) == "done")
        #expect(try await CacheWorker.run(["verify", directory, "0", "3000"]) == "present 3000 missing 0 wrong 0")
    }

    @Test("two processes writing 5,000 distinct keys each into one directory: all 10,000 are there")
    func twoProcessesShareADirectory() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.path + "/cache"
        let first = try CacheWorker.start(["write", directory, "0", "5000"])
        let second = try CacheWorker.start(["write", directory, "5000", "5000"])
        for (process, output) in [first, second] {
            try await waitForExit(process, readingToEnd: output)
            #expect(process.terminationStatus == 0)
        }
        let verdict = try await CacheWorker.run(["verify", directory, "0", "10000"])
        #expect(verdict == "present 10000 missing 0 wrong 0")
        let count = try await DatabaseQueue(path: directory + "/index.sqlite").read { db in
            try Int.fetchOne(db, sql: "SELECT count FROM totals")
        }
        #expect(count == 10_000)
    }
}
