import Dispatch
import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

#if canImport(Glibc)
import Glibc
#endif

/// With ``DiskCache/Durability/deferred(maximumDelay:)``, a crash loses at most
/// the last `maximumDelay` of writes — never a value committed earlier, and the index never keeps
/// a row whose value file is gone.
@Suite("DiskCache deferred durability under kill -9")
struct DiskCacheDeferredCrashTests {
    // MARK: - A write that replaces a key while its batch commits

    @Test("deferred durability: a write replacing a key its flush is committing leaves the committed file in place")
    func writeDuringCommitKeepsCommittedFile() async throws {
        let scratch = try TemporaryDirectory()
        var configuration = DiskCache.Configuration(name: "test")
        configuration.durability = .deferred(maximumDelay: .seconds(60))
        configuration.deferredCommitClock = SteppedClock()  // never advanced: flushes come from the test
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        let staging = try #require(cache.staging)
        let index = scratch.path + "/cache/index.sqlite"
        func value(_ byte: UInt8) -> Data { Data(repeating: byte, count: 40_000) }  // a file, not inline
        // Given: a committed value, and a newer one staged.
        try await cache.setData(value(0), forKey: "k")
        try await cache.flush()
        try await cache.setData(value(1), forKey: "k")
        // When: the flush of the staged value waits inside its commit (another connection holds
        // the write lock) and a third value replaces it meanwhile.
        let lock = try await IndexWriteLock(index: index)
        let flushed = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? cache.flush()
            flushed.signal()
        }
        try await eventually { staging.committingCount > 0 }
        #expect(staging.committingCount == 1, "the flush took the staged write")
        try await cache.setData(value(2), forKey: "k")
        lock.release()
        try await onOwnThread { flushed.wait() }
        // Then: what the index holds now — what a crash at this moment leaves — has its file.
        let committed = try await DatabaseQueue(path: index).read { db in
            try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = 'k'")
        }
        let file = try #require(committed)
        #expect(scratch.exists("cache/data/" + file), "the committed row's file \(file) is there")
        #expect(try await DiskCache(directory: scratch.url.appending(path: "cache")).data(forKey: "k") == value(1))
        // The newest value commits next, and removes the file it replaced.
        try await cache.flush()
        #expect(try await cache.data(forKey: "k") == value(2))
        #expect(scratch.dataFiles().count == 1, "files: \(scratch.dataFiles())")
    }

    // MARK: - kill -9 at random

    static let keys = 256
    /// Scheduling slack on top of `maximumDelay`: a timer that fires late on a loaded machine, the
    /// commit itself.
    static let slack = 0.75

    /// One lane of rounds on one cache directory, at one delay.
    struct Lane: Sendable {
        var delayMilliseconds: Int
        var rounds: Int
        /// When the kill comes after the writer opened the cache, in seconds.
        var killAfter: ClosedRange<Double>
    }

    /// What the rounds of one lane found.
    struct Findings: Sendable {
        var problems: [String] = []
        var writes = 0
        var checked = 0
        var misses = 0
    }

    /// What the log says about each key so far: every version written, and the newest one that
    /// must survive (written more than the delay plus slack before the kill that ended its writer).
    struct Ledger {
        var written: [Int: Set<Int>] = [:]
        var required: [Int: Int] = [:]

        /// Reads one round's log: `set K V` before each set, `done K V T` after it.
        mutating func read(_ log: String, killedAt: Double, allowance: Double) throws -> Int {
            var writes = 0
            for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 3, let key = Int(fields[1]), let version = Int(fields[2]) else { continue }
                if fields[0] == "set" {
                    written[key, default: []].insert(version)
                } else if fields[0] == "done", fields.count == 4, let time = Double(fields[3]) {
                    writes += 1
                    if killedAt - time > allowance { required[key] = max(required[key] ?? version, version) }
                }
            }
            return writes
        }
    }

    @Test("deferred durability loses no committed write: kill -9 at random, 24 rounds at 10 ms, 200 ms and 2 s")
    func committedWritesSurviveKill9() async throws {
        let lanes = [
            Lane(delayMilliseconds: 10, rounds: 8, killAfter: 0.2...1.2),
            Lane(delayMilliseconds: 200, rounds: 8, killAfter: 0.3...2.0),
            Lane(delayMilliseconds: 2_000, rounds: 8, killAfter: 0.5...4.5),
        ]
        let findings = try await withThrowingTaskGroup(of: (Int, Findings).self) { group in
            for lane in lanes {
                group.addTask { (lane.delayMilliseconds, try await onOwnThread { try Self.run(lane) }) }
            }
            return try await group.reduce(into: [Int: Findings]()) { $0[$1.0] = $1.1 }
        }
        for lane in lanes {
            let found = try #require(findings[lane.delayMilliseconds])
            #expect(found.problems.isEmpty, "\(lane.delayMilliseconds) ms: \(found.problems.prefix(10))")
            #expect(found.writes > 100, "\(lane.delayMilliseconds) ms: \(found.writes) writes")
            print(
                "deferred \(lane.delayMilliseconds) ms, \(lane.rounds) kills: \(found.writes) writes, "
                    + "\(found.checked) keys checked, \(found.misses) misses, \(found.problems.count) problems"
            )
        }
    }

    /// Runs `lane`'s rounds: a writer on the lane's cache, killed at a random moment, then the
    /// index and every key checked against the log.
    static func run(_ lane: Lane) throws -> Findings {
        let scratch = try TemporaryDirectory("deferredcrash\(lane.delayMilliseconds)")
        let directory = scratch.path + "/cache"
        let allowance = Double(lane.delayMilliseconds) / 1_000 + slack
        var ledger = Ledger()
        var findings = Findings()
        for round in 0..<lane.rounds {
            let log = scratch.path + "/log-\(round)"
            let (process, output) = try CacheWorker.start([
                "overwrite", directory, "\(lane.delayMilliseconds)", log, "\(keys)", "\(round * 10_000_000)",
            ])
            var seen = ""
            while !seen.contains("open") {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                seen += String(decoding: chunk, as: UTF8.self)
            }
            guard seen.contains("open") else {
                let exit = process.waitForExitReliably()
                throw TestFailure("the writer exited (\(exit.status)) before opening the cache")
            }
            usleep(UInt32(Double.random(in: lane.killAfter) * 1_000_000))
            let killedAt = Date().timeIntervalSince1970
            kill(process.processIdentifier, SIGKILL)
            let exit = process.waitForExitReliably()
            guard exit.wasSignaled else {
                throw TestFailure("the writer exited (\(exit.status)) before it was killed")
            }
            findings.writes += try ledger.read(log, killedAt: killedAt, allowance: allowance)
            findings.problems += try rowsWithoutFile(directory).map { "round \(round): \($0)" }
            try check(directory, ledger: ledger, round: round, into: &findings)
        }
        return findings
    }

    /// Rows of the index whose value file is gone, read before any open could collect them.
    static func rowsWithoutFile(_ directory: String) throws -> [String] {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        let rows = try DatabaseQueue(path: directory + "/index.sqlite", configuration: configuration).read { db in
            try Row.fetchAll(db, sql: "SELECT key, file FROM entry WHERE file IS NOT NULL")
        }
        return rows.compactMap { row in
            let (key, file): (String, String) = (row[0], row[1])
            var status = stat()
            return lstat(directory + "/data/" + file, &status) == 0 ? nil : "\(key): its file \(file) is gone"
        }
    }

    /// Reads every key: a value must be one the writer wrote for it, whole, and no older than the
    /// newest one that must survive; a miss only for a key none of whose writes must survive.
    static func check(_ directory: String, ledger: Ledger, round: Int, into findings: inout Findings) throws {
        var configuration = DiskCache.Configuration(name: "check")
        configuration.sizeLimit = nil
        let cache = try DiskCache(directory: URL(filePath: directory), configuration: configuration)
        for key in 0..<keys {
            findings.checked += 1
            let required = ledger.required[key]
            guard let value = try cache.data(forKey: "key-\(key)") else {
                findings.misses += 1
                if let required { findings.problems.append("round \(round): key-\(key) lost version \(required)") }
                continue
            }
            guard let header = VersionedValue.header(of: value), header.key == key,
                value == VersionedValue.make(key: key, version: header.version)
            else {
                findings.problems.append("round \(round): key-\(key) reads \(value.count) bytes it was never written")
                continue
            }
            if ledger.written[key]?.contains(header.version) != true {
                findings.problems.append("round \(round): key-\(key) reads version \(header.version), not in the log")
            } else if let required, header.version < required {
                findings.problems.append(
                    "round \(round): key-\(key) reads version \(header.version), older than \(required)"
                )
            }
        }
    }
}
