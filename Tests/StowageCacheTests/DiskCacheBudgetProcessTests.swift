import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Four processes write one cache with a hard limit for 30 s while the test kills them with
/// kill -9 at random and starts new ones: the limit holds, nothing reads back wrong, and no
/// committed entry is lost (only least-recently-used ones are ever missing).
@Suite("DiskCache budgets across processes")
struct DiskCacheBudgetProcessTests {
    static let limit: Int64 = 16_000_000  // as `StowageTestWorker cache write-hard` configures it
    static let largestValue: Int64 = 41_000
    static let duration: Double = 30

    /// One worker process and what it reported committed: key number → time before its set.
    final class Run: @unchecked Sendable {
        // `ledger` is written by the reader thread and read after `finished` is signalled.
        let first: Int
        let process: ChildProcess
        private(set) var ledger: [Int: Double] = [:]
        let finished = DispatchSemaphore(value: 0)

        init(first: Int, directory: String) throws {
            self.first = first
            let (process, output) = try CacheWorker.start(["write-hard", directory, "\(first)", "100000000"])
            self.process = process
            Thread.detachNewThread { [self] in
                var pending = Data()
                while true {
                    let chunk = output.availableData
                    if chunk.isEmpty { break }
                    pending += chunk
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        let fields = line.split(separator: " ")
                        if fields.count == 3, fields[0] == "committed", let number = Int(fields[1]),
                            let started = Double(fields[2])
                        {
                            ledger[number] = started
                        }
                    }
                }
                finished.signal()
            }
        }

        /// Kills the worker with SIGKILL and waits until its output is read to the end.
        func kill() {
            sendSignal(SIGKILL, to: process.processIdentifier)
            _ = process.waitForExitReliably()
            finished.wait()
        }
    }

    /// Every entry in the index, with its last access time, read in one snapshot.
    static func presentEntries(_ index: String) throws -> [Int: Double] {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        return try DatabaseQueue(path: index, configuration: configuration).read { db in
            var present: [Int: Double] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, accessed FROM entry") {
                let key: String = row[0]
                if let number = Int(key.dropFirst("key-".count)) { present[number] = row[1] }
            }
            return present
        }
    }

    /// Committed entries of `ledger` that are missing although an entry used less recently is
    /// still there: lost, since least-recently-used eviction would have taken the other first.
    /// A quarter second of slack covers a set that waited for the write lock.
    static func lost(_ ledger: [Int: Double], present: [Int: Double]) -> [Int] {
        guard let oldestPresent = present.values.min() else { return ledger.keys.sorted() }
        return ledger.filter { number, started in present[number] == nil && oldestPresent < started - 0.25 }
            .keys.sorted()
    }

    @Test("4 writers, kill -9 at random, 30 s: size never over the limit plus one value, nothing wrong, nothing lost")
    func fourWritersWithKills() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.path + "/cache"
        let index = directory + "/index.sqlite"
        var observer = DiskCache.Configuration(name: "observer")
        observer.sizeLimit = nil
        let observed = try DiskCache(directory: URL(filePath: directory), configuration: observer)

        let outcome = try await onOwnThread { () throws -> (largest: Int64, runs: [Run], kills: Int, lost: [Int]) in
            let stop = Atomic<Bool>(false)
            let largest = Atomic<Int64>(0)
            let sampled = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                while !stop.load(ordering: .relaxed) {
                    if let size = try? observed.usage().size.rawValue {
                        _ = largest.max(size, ordering: .relaxed)
                    }
                    usleep(2_000)
                }
                sampled.signal()
            }
            var nextFirst = 0
            func start() throws -> Run {
                defer { nextFirst += 10_000_000 }
                return try Run(first: nextFirst, directory: directory)
            }
            var slots = try (0..<4).map { _ in try start() }
            var finished: [Run] = []
            var lost: [Int] = []
            var kills = 0
            // At least the duration and at least 30 kills (a loaded machine starts writers
            // slowly), within three times the duration.
            let deadline = Date().addingTimeInterval(Self.duration)
            let latest = Date().addingTimeInterval(3 * Self.duration)
            while Date() < deadline || (kills < 30 && Date() < latest) {
                usleep(UInt32.random(in: 100_000...600_000))
                let slot = Int.random(in: 0..<slots.count)
                let victim = slots[slot]
                victim.kill()
                kills += 1
                // Right after the kill: what it had committed is there, or was evicted in turn.
                lost += Self.lost(victim.ledger, present: try Self.presentEntries(index))
                finished.append(victim)
                slots[slot] = try start()
            }
            for run in slots { run.kill() }
            finished += slots
            stop.store(true, ordering: .relaxed)
            sampled.wait()
            let present = try Self.presentEntries(index)
            for run in finished { lost += Self.lost(run.ledger, present: present) }
            return (largest.load(ordering: .relaxed), finished, kills, lost)
        }

        let committed = outcome.runs.reduce(0) { $0 + $1.ledger.count }
        #expect(outcome.kills >= 30, "kills: \(outcome.kills)")
        #expect(committed > 1_000, "committed: \(committed)")
        #expect(outcome.largest <= Self.limit + Self.largestValue, "largest size seen: \(outcome.largest)")
        #expect(outcome.lost.isEmpty, "lost: \(outcome.lost.prefix(20))")
        // Every value still there reads back as written (verified by the worker, which knows them).
        let runs = outcome.runs
        var present = 0
        var wrong = 0
        for run in runs {
            let count = (run.ledger.keys.max() ?? run.first) - run.first + 2
            let report = try await CacheWorker.run(["verify", directory, "\(run.first)", "\(count)"])
            let fields = report.split(separator: " ")
            present += Int(fields[1]) ?? 0
            wrong += Int(fields[5]) ?? 0
        }
        #expect(wrong == 0)
        #expect(present > 100)
        print(
            "budget across processes: \(outcome.kills) kills, \(committed) committed, largest size "
                + "\(outcome.largest) of \(Self.limit) (overshoot \(max(0, outcome.largest - Self.limit))), "
                + "\(present) present at the end, \(wrong) wrong, \(outcome.lost.count) lost"
        )
    }
}

/// `kill(2)`, under a name the workers' `kill()` method does not shadow.
private func sendSignal(_ signal: Int32, to process: Int32) {
    kill(process, signal)
}
