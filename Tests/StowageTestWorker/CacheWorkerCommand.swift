// A separate process for the disk cache's reliability tests: the tests kill it mid-write or
// run two at once on one directory, then check what it left with `verify`.
//
//   StowageTestWorker cache write DIR FIRST COUNT     writes key-FIRST … key-(FIRST+COUNT-1)
//   StowageTestWorker cache write-deferred DIR FIRST COUNT   the same with deferred durability
//                                                (10 ms batches), flushed before "done"
//   StowageTestWorker cache verify DIR FIRST COUNT    prints "present P missing M wrong W"
//   StowageTestWorker cache clear DIR 0 0             removes every value (another process's clear)
//   StowageTestWorker cache remove DIR KEY            removes KEY through a HybridCache<String>
//   StowageTestWorker cache remove-tagged DIR TAG     removes the values tagged TAG through one
//   StowageTestWorker cache write-hard DIR FIRST COUNT   writes as `write`, 2 ms apart, into a cache
//                                                with a hard 16 MB limit (trimmed to 12 MB),
//                                                printing "committed N T" after each, T being the
//                                                time (seconds since 1970) taken before the set
//   StowageTestWorker cache overwrite DIR DELAY_MS LOG KEYS FIRST_VERSION
//                                                overwrites key-0 … key-(KEYS-1) at random with
//                                                deferred durability (DELAY_MS), values from
//                                                `VersionedValue`, versions from FIRST_VERSION up,
//                                                until killed (or 120 s); appends "set K V" to LOG
//                                                before each set and "done K V T" after it (T: seconds
//                                                since 1970 when the set returned)
//
// Values depend only on the key's number; every seventh is larger than the inline threshold,
// so both the index and the files are exercised.
import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func value(for number: Int) -> Data {
    let count = number % 7 == 0 ? 40_000 + number % 1_000 : 100 + number % 3_000
    var bytes = [UInt8](repeating: 0, count: count)
    var state = UInt64(truncatingIfNeeded: number) &* 0x9E37_79B9_7F4A_7C15 | 1
    for index in bytes.indices {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        bytes[index] = UInt8(truncatingIfNeeded: state)
    }
    return Data(bytes)
}

/// `StowageTestWorker cache …`: `arguments[0]` names the command, as `CommandLine.arguments` would.
enum CacheWorkerCommand {
    static func run(_ arguments: [String]) {
        if arguments.count > 1, arguments[1] == "overwrite" { overwrite(arguments) }
        if arguments.count == 4, arguments[1] == "remove" || arguments[1] == "remove-tagged" { remove(arguments) }
        guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
            fail(
                "usage: StowageTestWorker cache write|write-async|write-deferred|write-hard|verify|clear DIR FIRST COUNT"
            )
        }
        var configuration = DiskCache.Configuration(name: "worker")
        configuration.sizeLimit = nil
        if arguments[1] == "write-deferred" { configuration.durability = .deferred(maximumDelay: .milliseconds(10)) }
        if arguments[1] == "write-hard" {
            configuration.sizeLimit = ByteCount(16_000_000)
            configuration.sizeLimitEnforcement = .hard
            configuration.trimRatio = 0.75
        }
        let directory = URL(filePath: arguments[2], directoryHint: .isDirectory)

        do {
            let cache = try DiskCache(directory: directory, configuration: configuration)
            switch arguments[1] {
            case "write", "write-deferred":
                say("open")
                for number in first..<(first + count) {
                    try cache.setData(value(for: number), forKey: "key-\(number)")
                    if number % 100 == 0 {
                        say("wrote \(number - first)")
                    }
                }
                try cache.flush()
                say("done")
            case "write-async":
                // 16 tasks awaiting setData, as a server's requests do: most writes wait for their
                // group commit suspended, and a kill lands among queued and committing writes.
                say("open")
                let written = WriteCount()
                let finished = DispatchSemaphore(value: 0)
                Task { [cache, first, count] in
                    await withTaskGroup(of: Void.self) { group in
                        for lane in 0..<16 {
                            group.addTask {
                                for number in stride(from: first + lane, to: first + count, by: 16) {
                                    do {
                                        try await cache.setData(value(for: number), forKey: "key-\(number)")
                                    } catch {
                                        fail("write \(number): \(error)")
                                    }
                                    let total = written.count.add(1, ordering: .relaxed).newValue
                                    if total % 100 == 0 { say("wrote \(total)") }
                                }
                            }
                        }
                    }
                    finished.signal()
                }
                finished.wait()
                say("done")
            case "write-hard":
                say("open")
                for number in first..<(first + count) {
                    let started = Date().timeIntervalSince1970
                    try cache.setData(value(for: number), forKey: "key-\(number)")
                    say("committed \(number) \(started)")
                    usleep(2_000)
                }
            case "verify":
                var present = 0
                var missing = 0
                var wrong = 0
                for number in first..<(first + count) {
                    switch try cache.data(forKey: "key-\(number)") {
                    case nil: missing += 1
                    case value(for: number): present += 1
                    default: wrong += 1
                    }
                }
                say("present \(present) missing \(missing) wrong \(wrong)")
            case "clear":
                try cache.removeAll()
                say("cleared")
            default:
                fail("unknown command \(arguments[1])")
            }
        } catch {
            fail("\(error)")
        }
    }
}

extension CacheWorkerCommand {
    /// `remove DIR KEY` / `remove-tagged DIR TAG`: removes through a `HybridCache<String>` of
    /// its own on DIR, as another process sharing the directory would (an app's extension), and
    /// prints `removed`.
    static func remove(_ arguments: [String]) -> Never {
        let directory = URL(filePath: arguments[2], directoryHint: .isDirectory)
        let finished = DispatchSemaphore(value: 0)
        Task {
            do {
                let cache = HybridCache(
                    memory: try MemoryCache<String, String>(configuration: .init(costLimit: 1 << 20)),
                    disk: try DiskCache(directory: directory),
                    serializer: StringSerializer()
                )
                if arguments[1] == "remove" {
                    try await cache.removeValue(forKey: arguments[3])
                } else {
                    _ = try await cache.removeAll(tagged: arguments[3])
                }
                say("removed")
            } catch {
                fail("\(error)")
            }
            finished.signal()
        }
        finished.wait()
        exit(0)
    }

    /// `overwrite DIR DELAY_MS LOG KEYS FIRST_VERSION`: the writer of the deferred-durability crash
    /// tests, which kill it at a random moment and check the cache against LOG.
    ///
    /// LOG is appended with one `write(2)` per line on an `O_APPEND` descriptor: a SIGKILL loses
    /// nothing the kernel has accepted, and an `fsync` per line (which only a power loss needs)
    /// would slow the writer a hundredfold, so that a flush would rarely meet a write of a key it
    /// is committing — the moment the tests are about.
    static func overwrite(_ arguments: [String]) -> Never {
        guard arguments.count == 7, let delay = Int(arguments[3]), let keys = Int(arguments[5]), keys > 0,
            let firstVersion = Int(arguments[6])
        else {
            fail("usage: StowageTestWorker cache overwrite DIR DELAY_MS LOG KEYS FIRST_VERSION")
        }
        let log = open(arguments[4], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else { fail("cannot open \(arguments[4]): errno \(errno)") }
        func append(_ line: String) {
            let bytes = Array((line + "\n").utf8)
            guard bytes.withUnsafeBytes({ write(log, $0.baseAddress, $0.count) }) == bytes.count else {
                fail("cannot append to \(arguments[4]): errno \(errno)")
            }
        }
        var configuration = DiskCache.Configuration(name: "overwrite")
        configuration.sizeLimit = nil
        configuration.durability = .deferred(maximumDelay: .milliseconds(delay))
        do {
            let cache = try DiskCache(
                directory: URL(filePath: arguments[2], directoryHint: .isDirectory),
                configuration: configuration
            )
            var versions = [Int](repeating: firstVersion, count: keys)
            let end = Date().addingTimeInterval(120)
            say("open")
            while Date() < end {
                let key = Int.random(in: 0..<keys)
                versions[key] += 1
                let version = versions[key]
                append("set \(key) \(version)")
                try cache.setData(VersionedValue.make(key: key, version: version), forKey: "key-\(key)")
                append("done \(key) \(version) \(Date().timeIntervalSince1970)")
            }
            try cache.flush()
            say("done")
            exit(0)
        } catch {
            fail("\(error)")
        }
    }
}

/// The writes of `write-async` that returned, across its tasks.
private final class WriteCount: Sendable {
    let count = Atomic<Int>(0)
}
