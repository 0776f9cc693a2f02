import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@Suite("HybridCache")
struct HybridCacheTests {
    struct Feed: Codable, Equatable, Sendable {
        var title: String
        var items: [Int]
    }

    private func makeCache<Value: Sendable>(
        _ scratch: TemporaryDirectory,
        serializer: some CacheSerializer<Value>
    ) throws -> HybridCache<Value> {
        HybridCache(
            memory: try MemoryCache<String, Value>(),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache")),
            serializer: serializer
        )
    }

    @Test("writes go through to disk; a new cache over the same directory reads them back")
    func writeThrough() async throws {
        let scratch = try TemporaryDirectory()
        let feed = Feed(title: "news", items: [1, 2, 3])
        do {
            let cache = try makeCache(scratch, serializer: JSONSerializer(Feed.self))
            try await cache.setValue(feed, forKey: "feed")
            #expect(cache.memory.value(forKey: "feed") == feed)
            let stored = try #require(try await cache.disk.data(forKey: "feed"))
            #expect(try JSONDecoder().decode(Feed.self, from: stored) == feed)
        }
        let reopened = try makeCache(scratch, serializer: JSONSerializer(Feed.self))
        #expect(reopened.memory.value(forKey: "feed") == nil)
        #expect(try await reopened.value(forKey: "feed") == feed)
        // The disk hit was promoted into memory.
        #expect(reopened.memory.value(forKey: "feed") == feed)
    }

    @Test("removeAll racing reads and writes of other keys: once it returns, no value written before it is served")
    func removeAllRacingReads() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        let keys = (0..<64).map { "old-\($0)" }
        for round in 0..<20 {
            for key in keys { try await cache.setValue("v\(round)", forKey: key) }
            // Half the old keys are dropped from memory, so readers promote them from disk.
            for key in keys.prefix(32) { cache.levels.removeFromMemory(key) }
            let stop = Flag()
            let readers = (0..<4).map { reader in
                Task {
                    var index = reader
                    while !stop.isSet {
                        _ = try await cache.value(forKey: keys[index % keys.count])
                        try await cache.setValue("new", forKey: "new-\(reader)-\(index % 8)")
                        index += 3
                    }
                }
            }
            let report = try await cache.removeAll()
            #expect(report.failures.isEmpty)
            for key in keys {
                let value = try await cache.value(forKey: key)
                #expect(value == nil, "round \(round): \(key) served \(value ?? "") after removeAll returned")
            }
            stop.set()
            for reader in readers { try await reader.value }
        }
    }

    @Test("without a shared level, run() waits until cancelled and returns without an error")
    func runWithoutSharedLevel() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        let returned = Flag()
        let run = Task {
            try await cache.run()
            returned.set()
        }
        // A write and a read through the running cache: run() is still waiting after them.
        try await cache.setValue("v", forKey: "k")
        #expect(try await cache.value(forKey: "k") == "v")
        #expect(!returned.isSet, "run() returned before it was cancelled")
        run.cancel()
        try await run.value
        #expect(returned.isSet)
        #expect(try await cache.value(forKey: "k") == "v")
    }

    @Test("every serializer round-trips")
    func serializers() throws {
        let feed = Feed(title: "t", items: [42])
        #expect(try DataSerializer().decode(DataSerializer().encode(Data([1, 2]))) == Data([1, 2]))
        #expect(try StringSerializer().decode(StringSerializer().encode("héllo")) == "héllo")
        #expect(try JSONSerializer(Feed.self).decode(JSONSerializer(Feed.self).encode(feed)) == feed)
        let plist = try PropertyListSerializer(Feed.self).encode(feed)
        #expect(plist.starts(with: Data("bplist".utf8)))
        #expect(try PropertyListSerializer(Feed.self).decode(plist) == feed)
        #expect(throws: StowageError.self) { try StringSerializer().decode(Data([0xFF, 0xFE])) }
    }

    @Test("bytes that no longer decode are removed and read as a miss")
    func undecodable() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: JSONSerializer(Feed.self))
        try await cache.disk.setData(Data("not json".utf8), forKey: "feed")
        #expect(try await cache.value(forKey: "feed") == nil)
        #expect(try await !cache.disk.contains(key: "feed"))
    }

    @Test("concurrent loads of one key run the loader once and all get its value")
    func coalescing() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        let calls = LoadCounter()
        let callers = LoadCounter()
        let released = Flag()
        // The loader holds until every caller has asked (and a moment more, the release's poll):
        // uncoalesced callers would each have run it by then.
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    callers.increment()
                    return try await cache.value(forKey: "k") {
                        calls.increment()
                        try await eventually { released.isSet }
                        return "loaded"
                    }
                }
            }
            try await eventually { callers.value == 50 && calls.value >= 1 }
            released.set()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(values == Array(repeating: "loaded", count: 50))
        #expect(calls.value == 1)
        #expect(try await cache.disk.data(forKey: "k") == Data("loaded".utf8))
    }

    @Test("a failing loader stores nothing and every waiter gets its error; the next call loads again")
    func failingLoader() async throws {
        struct Offline: Error {}
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        let callers = LoadCounter()
        let released = Flag()
        let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    callers.increment()
                    do {
                        _ = try await cache.value(forKey: "k") {
                            try await eventually { released.isSet }
                            throw Offline()
                        }
                        return false
                    } catch {
                        return error is Offline
                    }
                }
            }
            try await eventually { callers.value == 10 }
            released.set()
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(failures == 10)
        #expect(cache.memory.value(forKey: "k") == nil)
        #expect(try await cache.disk.data(forKey: "k") == nil)
        #expect(try await cache.value(forKey: "k") { "second try" } == "second try")
    }

    @Test("removal empties both tiers")
    func removal() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("a", forKey: "a")
        try await cache.setValue("b", forKey: "b")
        try await cache.removeValue(forKey: "a")
        #expect(try await cache.value(forKey: "a") == nil)
        try await cache.removeAll()
        #expect(try await cache.value(forKey: "b") == nil)
        #expect(try await cache.disk.usage().count == 0)
    }
}

/// Counts loader calls across tasks.
/// A flag one task raises for others.
private final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    func set() { raised.store(true, ordering: .releasing) }
    var isSet: Bool { raised.load(ordering: .acquiring) }
}

final class LoadCounter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
