import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// `URLCache`'s modes, as apps configure it: memory only, disabled, and the process-wide
/// default. Each test names the `URLCache` behaviour it reproduces.
@Suite struct URLCacheModesTests {
    /// Every file under `root`, relative to it.
    func files(under root: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        return (enumerator?.allObjects as? [String]) ?? []
    }

    func configuration(memory: Int64, disk: Int64, clock: ManualClock) -> HTTPCache.Configuration {
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.clock = clock.cacheClock
        configuration.memoryCapacity = ByteCount(memory)
        configuration.diskCapacity = ByteCount(disk)
        return configuration
    }

    @Test("URLCache(memoryCapacity:diskCapacity: 0): responses are reused from memory and no file is written")
    func memoryOnlyWithZeroDiskCapacity() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let directory = root.appending(path: "http")
            let cache = try HTTPCache(
                directory: directory,
                configuration: configuration(
                    memory: 1_000_000,
                    disk: 0,
                    clock: clock
                )
            )
            #expect(cache.mode == .memoryOnly)
            #expect(cache.disk == nil, "a memory-only cache creates no DiskCache")
            let origin = TestOrigin { _, index in ok("v\(index)", [("Cache-Control", "max-age=60")], clock: clock) }
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(first.outcome == .miss)
            #expect(first.status.stored)
            #expect(try await text(first) == "v1")
            let second = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(second.outcome == .hit)
            #expect(try await text(second) == "v1")
            #expect(origin.count == 1)
            // A body streamed in pieces (above the streaming threshold) stays in memory too.
            let large = String(repeating: "x", count: 40_000)
            origin.setScript { _, _ in ok(large, [("Cache-Control", "max-age=60")], clock: clock) }
            let streamed = try await cache.respond(
                to: request(.get, "/large"),
                fetch: origin.streamingFetch(chunk: 1_000)
            )
            #expect(try await text(streamed) == large)
            #expect(try await cache.respond(to: request(.get, "/large"), fetch: origin.fetch).outcome == .hit)
            #expect(try await cache.diskUsage().count == 0)
            #expect(cache.memoryUsage.rawValue > 40_000)
            #expect(files(under: root).isEmpty, "\(files(under: root))")
        }
    }

    @Test("URLCache(memoryCapacity:diskCapacity: 0, directory: nil) and URLCache.shared: no file anywhere")
    func memoryOnlyWithoutDirectory() async throws {
        let scratch = try TemporaryDirectory()
        let process = TestWorker.process("http-cache", ["memory-only"])
        process.currentDirectoryURL = scratch.url
        var environment = ProcessInfo.processInfo.environment
        for name in ["HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_DATA_HOME"] { environment[name] = scratch.path }
        process.environment = environment
        let output = childPipe()
        process.standardOutput = output
        try process.run()
        let printed = await BlockingWork.run { output.fileHandleForReading.readDataToEndOfFile() }
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        #expect(String(decoding: printed, as: UTF8.self) == "memoryOnly miss hit\nmemoryOnly miss hit\n")
        #expect(files(under: scratch.url).isEmpty, "\(files(under: scratch.url))")
    }

    @Test("URLCache(memoryCapacity: 0, diskCapacity: 0): every request goes to the origin, no error, no file")
    func disabled() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try HTTPCache(
                directory: root.appending(path: "http"),
                configuration: configuration(memory: 0, disk: 0, clock: clock)
            )
            #expect(cache.mode == .disabled)
            #expect(cache.disk == nil)
            let origin = TestOrigin { _, index in ok("v\(index)", [("Cache-Control", "max-age=60")], clock: clock) }
            for index in 1...3 {
                let served = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(served.outcome == .miss)
                #expect(!served.status.stored)
                #expect(try await text(served) == "v\(index)")
            }
            #expect(origin.count == 3)
            // Nothing stored, so the offline policy has nothing to give (URLSession fails it too).
            await #expect {
                _ = try await cache.respond(to: request(), policy: .returnCacheDataDontLoad, fetch: origin.fetch)
            } throws: { ($0 as? StowageError)?.code == .notCached }
            #expect(origin.count == 3)
            #expect(cache.memoryUsage.rawValue == 0)
            #expect(files(under: root).isEmpty, "\(files(under: root))")
        }
    }

    @Test(
        "URLCache(memoryCapacity: 0, diskCapacity: 0): concurrent requests for one URL do not wait for each other",
        .timeLimit(.minutes(5))
    )
    func disabledDoesNotCollapse() async throws {
        let clock = ManualClock(startingAt: t0)
        var configuration = configuration(memory: 0, disk: 0, clock: clock)
        configuration.waitClock = SteppedClock()
        let cache = try HTTPCache(directory: nil, configuration: configuration)
        let origin = TestOrigin { _, _ in ok("v", [("Cache-Control", "max-age=60")], clock: clock) }
        let release = AsyncStream<Void>.makeStream()
        let arrived = AsyncStream<Void>.makeStream()
        let gated: HTTPFetch = { request, body in
            arrived.continuation.yield()
            for await _ in release.stream { break }
            return try await origin.fetch(request, body)
        }
        // With collapsing, the second request would wait on a (manual, never advanced) clock for
        // the first: both reaching the origin before either is answered shows neither waits.
        async let first = cache.respond(to: request(), fetch: gated)
        async let second = cache.respond(to: request(), fetch: gated)
        var seen = 0
        for await _ in arrived.stream {
            seen += 1
            if seen == 2 { break }
        }
        release.continuation.yield()
        release.continuation.yield()
        release.continuation.finish()
        #expect(try await [first.outcome, second.outcome] == [.miss, .miss])
        #expect(origin.count == 2)
    }

    @Test("URLCache refuses a negative capacity: the error names the capacity and says 0 turns the tier off")
    func negativeCapacities() throws {
        let clock = ManualClock(startingAt: t0)
        for (memory, disk, name) in [(Int64(-1), Int64(100), "memoryCapacity"), (1_000, -1, "diskCapacity")] {
            let error = #expect(throws: StowageError.self) {
                _ = try HTTPCache(
                    directory: nil,
                    configuration: configuration(memory: memory, disk: disk, clock: clock)
                )
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.hasPrefix("\(name) is -1 bytes") == true, "\(String(describing: error))")
        }
    }
}

/// What the modes do at their edges: huge capacities, huge bodies.
@Suite struct URLCacheModeEdgeTests {
    @Test("URLCache accepts any capacity up to Int.max: a memory-only cache that large stores and serves")
    func hugeCapacities() async throws {
        let clock = ManualClock(startingAt: t0)
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.clock = clock.cacheClock
        configuration.memoryCapacity = ByteCount(Int64.max)
        configuration.diskCapacity = ByteCount(Int64.max)
        configuration.maximumEntryFraction = 1
        let cache = try HTTPCache(directory: nil, configuration: configuration)
        let origin = TestOrigin { _, _ in ok("v", [("Cache-Control", "max-age=60")], clock: clock) }
        #expect(try await cache.respond(to: request(), fetch: origin.fetch).status.stored)
        #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .hit)
    }

    @Test(
        "URLCache(memoryCapacity: 0, diskCapacity: 0) fed a 1 GB response: it streams through, nothing is buffered",
        .timeLimit(.minutes(5))
    )
    func disabledPassesAGigabyteThrough() async throws {
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.memoryCapacity = ByteCount(0)
        configuration.diskCapacity = ByteCount(0)
        let cache = try HTTPCache(directory: nil, configuration: configuration)
        let size: Int64 = 1 << 30
        let fetch: HTTPFetch = { _, _ in
            var response = HTTPResponse(status: .ok)
            response.headerFields[.cacheControl] = "max-age=600"
            response.headerFields[.contentLength] = String(size)
            return (response, HTTPBody(GeneratedChunks(total: size, chunk: 1 << 20), length: size))
        }
        let served = try await cache.respond(to: request(), fetch: fetch)
        var received: Int64 = 0
        for try await chunk in served.body { received += Int64(chunk.count) }
        #expect(received == size)
        #expect(!served.status.stored)
        #expect(cache.memoryUsage.rawValue == 0)
    }
}

/// `total` bytes in `chunk`-byte pieces, made as they are read (a 1 GB body never in memory).
struct GeneratedChunks: AsyncSequence, Sendable {
    let total: Int64
    let chunk: Int
    struct AsyncIterator: AsyncIteratorProtocol {
        var left: Int64
        let chunk: Int
        mutating func next() async throws -> [UInt8]? {
            guard left > 0 else { return nil }
            let count = Int(Swift.min(Int64(chunk), left))
            left -= Int64(count)
            return [UInt8](repeating: 0x61, count: count)
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: total, chunk: chunk) }
}

/// `HTTPCache.shared`: one test at a time, as they replace it (and put the original back).
@Suite(.serialized) struct SharedHTTPCacheTests {
    @Test("URLCache.shared's default: one process-wide cache, in memory only, made on first use")
    func defaultIsMemoryOnly() {
        let shared = HTTPCache.shared
        #expect(HTTPCache.shared === shared, "every read returns the same cache")
        #expect(shared.mode == .memoryOnly)
        #expect(shared.disk == nil)
    }

    @Test("URLCache.shared = myCache at launch: later reads return the cache set")
    func replaceable() throws {
        let original = HTTPCache.shared
        defer { HTTPCache.shared = original }
        var configuration = HTTPCache.Configuration()
        configuration.memoryCapacity = ByteCount(0)
        configuration.diskCapacity = ByteCount(0)
        let disabled = try HTTPCache(directory: nil, configuration: configuration)
        HTTPCache.shared = disabled
        #expect(HTTPCache.shared === disabled)
        #expect(HTTPCache.shared.mode == .disabled)
    }

    @Test("URLCache.shared set and read from many tasks at once: every read is a whole cache, the last set wins")
    func concurrentReplacement() async throws {
        let original = HTTPCache.shared
        defer { HTTPCache.shared = original }
        let caches = try (0..<64).map { _ in try HTTPCache(directory: nil) }
        let last = try HTTPCache(directory: nil)
        await withTaskGroup(of: Void.self) { group in
            for cache in caches {
                group.addTask {
                    HTTPCache.shared = cache
                    #expect(HTTPCache.shared.mode == .memoryOnly)
                }
            }
        }
        HTTPCache.shared = last
        #expect(HTTPCache.shared === last)
    }
}
