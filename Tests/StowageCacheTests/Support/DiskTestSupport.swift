import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization

extension TemporaryDirectory {
    /// Relative names of the value files under `cache/data`.
    func dataFiles(cache: String = "cache") -> Set<String> {
        let data = url.appending(path: "\(cache)/data")
        var names = Set<String>()
        for subdirectory in (try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? [] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: data.appending(path: subdirectory).path))
                ?? []
            {
                names.insert(subdirectory + "/" + name)
            }
        }
        return names
    }
}

/// Another connection holding a disk cache index's write lock (an `IMMEDIATE` transaction) on a
/// thread of its own, from when `init` returns until ``release()``: the cache's commits wait.
final class IndexWriteLock: Sendable {
    private let released = DispatchSemaphore(value: 0)

    init(index path: String) async throws {
        let holder = try DatabaseQueue(path: path)
        let taken = DispatchSemaphore(value: 0)
        let released = released
        Thread.detachNewThread {
            try? holder.inTransaction(.immediate) { _ in
                taken.signal()
                released.wait()
                return .rollback
            }
        }
        try await onOwnThread { taken.wait() }
    }

    /// Ends the transaction; call it once, on every path (a `defer` too).
    func release() { released.signal() }
}

/// `StowageTestWorker cache …` (see Tests/StowageTestWorker/CacheWorkerCommand.swift).
enum CacheWorker {

    static func start(_ arguments: [String]) throws -> (ChildProcess, FileHandle) {
        let process = TestWorker.process("cache", arguments)
        let output = childPipe()
        process.standardOutput = output
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// Runs the worker to the end and returns its last output line; the wait happens on a thread
    /// of its own, not on a cooperative thread.
    static func run(_ arguments: [String]) async throws -> String {
        let (process, output) = try start(arguments)
        let data = try await waitForExit(process, readingToEnd: output)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        guard process.terminationStatus == 0, let last = lines.last else {
            throw TestFailure("worker \(arguments) exited \(process.terminationStatus)")
        }
        return String(last)
    }
}

extension HybridCache where Value == String {
    /// A cache of strings on a disk cache at `directory` with 1 MiB of memory in front: the
    /// handle the store-wide tests (generations, removals) open, often two on one directory.
    static func strings(at directory: URL) throws -> HybridCache<String> {
        HybridCache(
            memory: try MemoryCache(configuration: .init(costLimit: 1 << 20)),
            disk: try DiskCache(directory: directory),
            serializer: StringSerializer()
        )
    }
}
