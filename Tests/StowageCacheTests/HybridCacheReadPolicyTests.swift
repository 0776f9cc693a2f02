import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@Suite("HybridCache read policies")
struct HybridCacheReadPolicyTests {
    /// A value that carries its validator, as an HTTP body carries its ETag.
    struct Tagged: Codable, Equatable, Sendable {
        var etag: String
        var body: String
    }

    private func makeCache<Value: Sendable>(
        _ scratch: TemporaryDirectory,
        serializer: some CacheSerializer<Value>,
        clock: ManualClock? = nil
    ) throws -> HybridCache<Value> {
        var memory = MemoryCache<String, Value>.Configuration()
        memory.memoryPressureSource = nil
        var disk = DiskCache.Configuration()
        if let clock {
            memory.clock = clock.cacheClock
            disk.clock = clock.cacheClock
        }
        return HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: disk),
            serializer: serializer
        )
    }

    @Test("reloadIgnoringCache loads even on a hit and stores the result")
    func reloadIgnoringCache() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("cached", forKey: "k")
        let calls = LoadCounter()

        let value = try await cache.value(forKey: "k", policy: .reloadIgnoringCache) {
            calls.increment()
            return "reloaded"
        }
        #expect(value == "reloaded")
        #expect(calls.value == 1)
        #expect(cache.memory.value(forKey: "k") == "reloaded")
        #expect(try await cache.disk.data(forKey: "k") == Data("reloaded".utf8))
    }

    @Test("reloadIgnoringCache keeps the cached value when the load fails")
    func reloadFailureKeepsCachedValue() async throws {
        struct Offline: Error {}
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("cached", forKey: "k")
        await #expect(throws: Offline.self) {
            try await cache.value(forKey: "k", policy: .reloadIgnoringCache) { throw Offline() }
        }
        #expect(try await cache.value(forKey: "k") == "cached")
    }

    @Test("returnCacheDontLoad never calls the loader: the cached value, else notFound")
    func returnCacheDontLoad() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("cached", forKey: "hit")
        cache.memory.removeAll()  // the hit comes from disk
        let calls = LoadCounter()
        let load: @Sendable () async throws -> String = {
            calls.increment()
            return "loaded"
        }

        #expect(try await cache.value(forKey: "hit", policy: .returnCacheDontLoad, orLoad: load) == "cached")
        let error = try await #require(throws: StowageError.self) {
            try await cache.value(forKey: "miss", policy: .returnCacheDontLoad, orLoad: load)
        }
        #expect(error.code == .notFound)
        #expect(error.message.contains("'miss'"))
        #expect(calls.value == 0)
        #expect(try await cache.value(forKey: "miss") == nil)
    }

    @Test("revalidate hands the cached value to the check and keeps it when not modified")
    func revalidateNotModified() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: JSONSerializer(Tagged.self))
        let stored = Tagged(etag: "v1", body: "hello")
        try await cache.setValue(stored, forKey: "k")
        let seen = Mutex<[String]>([])
        let calls = LoadCounter()

        let value = try await cache.value(
            forKey: "k",
            policy: .revalidate { cached in
                seen.withLock { $0.append(cached.etag) }
                return .notModified
            },
            orLoad: {
                calls.increment()
                return Tagged(etag: "v2", body: "loaded")
            }
        )
        #expect(value == stored)
        #expect(seen.withLock { $0 } == ["v1"])
        #expect(calls.value == 0)
    }

    @Test("revalidate stores the newer value when modified, and loads without asking on a miss")
    func revalidateModified() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: JSONSerializer(Tagged.self))
        try await cache.setValue(Tagged(etag: "v1", body: "old"), forKey: "k")
        let newer = Tagged(etag: "v2", body: "new")
        let checks = LoadCounter()
        let policy = HybridCache<Tagged>.ReadPolicy.revalidate { cached in
            checks.increment()
            return cached.etag == "v2" ? .notModified : .modified(newer)
        }

        #expect(try await cache.value(forKey: "k", policy: policy) { Tagged(etag: "x", body: "x") } == newer)
        cache.memory.removeAll()
        #expect(try await cache.value(forKey: "k") == newer)  // stored on disk too
        #expect(try await cache.value(forKey: "gone", policy: policy) { newer } == newer)
        #expect(checks.value == 1)
    }

    @Test("revalidate with a time-to-live starts a kept value's lifetime over")
    func revalidateFreshens() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        let cache = try makeCache(scratch, serializer: StringSerializer(), clock: clock)
        try await cache.setValue("v", forKey: "k", timeToLive: .seconds(100))
        clock.advance(by: .seconds(60))

        let kept = try await cache.value(
            forKey: "k",
            timeToLive: .seconds(100),
            policy: .revalidate { _ in .notModified },
            orLoad: { "loaded" }
        )
        #expect(kept == "v")
        clock.advance(by: .seconds(60))  // 120 s after the write, 60 s after the revalidation
        #expect(try await cache.value(forKey: "k") == "v")
        cache.memory.removeAll()
        #expect(try await cache.value(forKey: "k") == "v")
    }

    @Test("a removal or a newer write during revalidation is not undone by storing the kept value again")
    func revalidateDoesNotResurrect() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("old", forKey: "removed")
        try await cache.setValue("old", forKey: "rewritten")

        // The source answers 304 for the copy it was asked about, but the key changed meanwhile
        // (another task removed it, or stored a newer value).
        let kept = try await cache.value(
            forKey: "removed",
            timeToLive: .seconds(100),
            policy: .revalidate { _ in
                try await cache.removeValue(forKey: "removed")
                return .notModified
            },
            orLoad: { "loaded" }
        )
        #expect(kept == "old")
        #expect(try await cache.value(forKey: "removed") == nil)
        #expect(try await cache.disk.data(forKey: "removed") == nil)

        _ = try await cache.value(
            forKey: "rewritten",
            timeToLive: .seconds(100),
            policy: .revalidate { _ in
                try await cache.setValue("new", forKey: "rewritten")
                return .notModified
            },
            orLoad: { "loaded" }
        )
        #expect(try await cache.value(forKey: "rewritten") == "new")
        cache.memory.removeAll()
        #expect(try await cache.value(forKey: "rewritten") == "new")
    }
}
