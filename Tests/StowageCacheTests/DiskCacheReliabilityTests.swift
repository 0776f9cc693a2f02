import Foundation
import GRDB
import StowageCache
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Real processes: one killed with SIGKILL mid-write, two writing to one directory at once.
@Suite("DiskCache reliability", .serialized)
struct DiskCacheReliabilityTests {
    @Test("kill -9 during 10,000 writes: every value reads back whole or not at all; index and files agree")
    func killDuringWrites() throws {
        let scratch = try DiskTestDirectory()
        let directory = scratch.path + "/cache"
        let (process, output) = try CacheWorker.start(["write", directory, "0", "10000"])
        // Let it get well into the writes, then kill it without warning.
        var seen = ""
        while !seen.contains("wrote 1500") {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        // Reopening collects what the crash left; every key reads back right or is missing.
        let verdict = try CacheWorker.run(["verify", directory, "0", "10000"])
        let numbers = verdict.split(separator: " ").compactMap { Int($0) }
        try #require(numbers.count == 3, "worker said: \(verdict)")
        #expect(numbers[2] == 0, "values that read back wrong: \(verdict)")
        #expect(numbers[0] >= 1500, "values present: \(verdict)")

        // The index and the data directory name exactly the same files.
        let indexed = try DatabaseQueue(path: directory + "/index.sqlite").read { db in
            Set(try String.fetchAll(db, sql: "SELECT file FROM entry WHERE file IS NOT NULL"))
        }
        #expect(indexed == scratch.dataFiles())
        let temporary = try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")
        #expect(temporary.isEmpty)
    }

    @Test("kill -9 during 10,000 deferred writes: what was lost is missing, nothing reads back wrong")
    func killDuringDeferredWrites() throws {
        let scratch = try DiskTestDirectory()
        let directory = scratch.path + "/cache"
        let (process, output) = try CacheWorker.start(["write-deferred", directory, "0", "10000"])
        var seen = ""
        while !seen.contains("wrote 3000") {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        let verdict = try CacheWorker.run(["verify", directory, "0", "10000"])
        let numbers = verdict.split(separator: " ").compactMap { Int($0) }
        try #require(numbers.count == 3, "worker said: \(verdict)")
        #expect(numbers[2] == 0, "values that read back wrong: \(verdict)")
        // Batches commit every 10 ms; the first thousands were written long before the kill.
        #expect(numbers[0] >= 1000, "values present: \(verdict)")
        let indexed = try DatabaseQueue(path: directory + "/index.sqlite").read { db in
            Set(try String.fetchAll(db, sql: "SELECT file FROM entry WHERE file IS NOT NULL"))
        }
        #expect(indexed == scratch.dataFiles())
    }

    @Test("deferred writes that end with a flush are all there for the next process")
    func deferredWritesFlushed() throws {
        let scratch = try DiskTestDirectory()
        let directory = scratch.path + "/cache"
        #expect(try CacheWorker.run(["write-deferred", directory, "0", "3000"]) == "done")
        #expect(try CacheWorker.run(["verify", directory, "0", "3000"]) == "present 3000 missing 0 wrong 0")
    }

    @Test("two processes writing 5,000 distinct keys each into one directory: all 10,000 are there")
    func twoProcessesShareADirectory() throws {
        let scratch = try DiskTestDirectory()
        let directory = scratch.path + "/cache"
        let first = try CacheWorker.start(["write", directory, "0", "5000"])
        let second = try CacheWorker.start(["write", directory, "5000", "5000"])
        for (process, output) in [first, second] {
            _ = output.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        let verdict = try CacheWorker.run(["verify", directory, "0", "10000"])
        #expect(verdict == "present 10000 missing 0 wrong 0")
        let count = try DatabaseQueue(path: directory + "/index.sqlite").read { db in
            try Int.fetchOne(db, sql: "SELECT count FROM totals")
        }
        #expect(count == 10_000)
    }
}
