import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@Suite("HybridCache placement and memory cost")
struct HybridCachePlacementTests {
    /// A decoded image stand-in: small when encoded, `width × height × 4` bytes in memory.
    struct Bitmap: Codable, Equatable, Sendable {
        var width: Int
        var height: Int
        var decodedSize: Int { width * height * 4 }
    }

    private func makeCache<Value: Sendable>(
        _ scratch: TemporaryDirectory,
        serializer: some CacheSerializer<Value>,
        configuration: HybridCache<Value>.Configuration = .init()
    ) throws -> HybridCache<Value> {
        var memory = MemoryCache<String, Value>.Configuration()
        memory.memoryPressureSource = nil
        return HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache")),
            serializer: serializer,
            configuration: configuration
        )
    }

    // MARK: - Cost

    @Test("memory cost of a value is its decoded size, not its encoded size")
    func decodedCost() async throws {
        let scratch = try TemporaryDirectory()
        let image = Bitmap(width: 640, height: 480)
        let configuration = HybridCache<Bitmap>.Configuration { image, _ in image.decodedSize }
        let encoded = try JSONSerializer(Bitmap.self).encode(image).count
        do {
            let cache = try makeCache(scratch, serializer: JSONSerializer(Bitmap.self), configuration: configuration)
            try await cache.setValue(image, forKey: "photo")
            #expect(cache.memory.totalCost == image.decodedSize)
            #expect(cache.memory.totalCost != encoded)
        }
        // A promotion from disk costs the same.
        let reopened = try makeCache(scratch, serializer: JSONSerializer(Bitmap.self), configuration: configuration)
        #expect(try await reopened.value(forKey: "photo") == image)
        #expect(reopened.memory.totalCost == image.decodedSize)
    }

    @Test("by default a value costs its encoded size")
    func encodedCostByDefault() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("twelve bytes", forKey: "k")
        #expect(cache.memory.totalCost == 12)
    }

    @Test(
        "a cost function that returns a negative number is refused, the earlier value is kept",
        arguments: [-1, Int.min, Int.max]
    )
    func refusedCost(badCost: Int) async throws {
        let scratch = try TemporaryDirectory()
        let configuration = HybridCache<String>.Configuration { value, size in value == "bad" ? badCost : size }
        let cache = try makeCache(scratch, serializer: StringSerializer(), configuration: configuration)
        try await cache.setValue("good", forKey: "k")

        let error = try await #require(throws: StowageError.self) {
            try await cache.setValue("bad", forKey: "k")
        }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("'k'"))
        #expect(error.message.contains("\(badCost)"))
        #expect(cache.memory.value(forKey: "k") == "good")
        #expect(try await cache.disk.data(forKey: "k") == Data("good".utf8))
        #expect(try await cache.value(forKey: "k") == "good")
    }

    @Test("a disk-only write of a value whose cost is refused is refused too: it could never be read back")
    func refusedCostDiskOnly() async throws {
        let scratch = try TemporaryDirectory()
        let configuration = HybridCache<String>.Configuration { value, size in value == "bad" ? -1 : size }
        let cache = try makeCache(scratch, serializer: StringSerializer(), configuration: configuration)
        try await cache.setValue("good", forKey: "k")

        let error = try await #require(throws: StowageError.self) {
            try await cache.setValue("bad", forKey: "k", placement: .diskOnly)
        }
        #expect(error.code == .invalidConfiguration)
        #expect(cache.memory.value(forKey: "k") == "good")
        #expect(try await cache.disk.data(forKey: "k") == Data("good".utf8))
        cache.memory.removeAll()
        #expect(try await cache.value(forKey: "k") == "good")
    }

    // MARK: - Placement of writes

    @Test("a memory-only write is never written to disk and an older disk copy is not served after")
    func memoryOnlyWrite() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("old", forKey: "k")

        try await cache.setValue("new", forKey: "k", placement: .memoryOnly)
        #expect(try await cache.value(forKey: "k") == "new")
        #expect(try await cache.disk.data(forKey: "k") == nil)
        try await cache.setValue("fresh", forKey: "other", placement: .memoryOnly)
        #expect(try await !cache.disk.contains(key: "other"))

        // Memory lets the new value go: the old disk copy must not come back.
        cache.memory.removeAll()
        #expect(try await cache.value(forKey: "k") == nil)
    }

    @Test("a disk-only write is not kept in memory and replaces the older memory copy")
    func diskOnlyWrite() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("old", forKey: "k")

        try await cache.setValue("new", forKey: "k", placement: .diskOnly)
        #expect(cache.memory.value(forKey: "k") == nil)
        #expect(try await cache.disk.data(forKey: "k") == Data("new".utf8))
        #expect(try await cache.value(forKey: "k") == "new")
    }

    @Test("a tagged memory-only write is refused: removeAll(tagged:) finds tags on disk and would miss it")
    func taggedMemoryOnlyWriteRefused() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("old", forKey: "k", tag: "user-42")

        let error = try await #require(throws: StowageError.self) {
            try await cache.setValue("new", forKey: "k", tag: "user-42", placement: .memoryOnly)
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("'k'") && error.message.contains("user-42"))
        #expect(try await cache.value(forKey: "k") == "old")  // nothing stored or removed

        // A purge by tag (a sign-out, say) leaves nothing of the key behind.
        #expect(try await cache.removeAll(tagged: "user-42") == ["k"])
        #expect(try await cache.value(forKey: "k") == nil)
    }

    // MARK: - Removal from one level

    @Test("remove from memory only keeps the disk copy")
    func removeFromMemoryOnly() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("v", forKey: "k")

        try await cache.removeValue(forKey: "k", from: .memoryOnly)
        #expect(cache.memory.value(forKey: "k") == nil)
        #expect(try await cache.disk.data(forKey: "k") == Data("v".utf8))
        #expect(try await cache.value(forKey: "k") == "v")
        #expect(cache.memory.value(forKey: "k") == "v")
    }

    @Test("remove from disk only keeps the memory copy")
    func removeFromDiskOnly() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("v", forKey: "k")

        try await cache.removeValue(forKey: "k", from: .diskOnly)
        #expect(try await !cache.disk.contains(key: "k"))
        #expect(cache.memory.value(forKey: "k") == "v")
        #expect(try await cache.value(forKey: "k") == "v")
    }

    @Test("remove from all levels empties memory and disk")
    func removeFromAll() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        try await cache.setValue("v", forKey: "k")

        try await cache.removeValue(forKey: "k", from: .all)
        #expect(cache.memory.value(forKey: "k") == nil)
        #expect(try await !cache.disk.contains(key: "k"))
    }

    // MARK: - Concurrent writes of one key

    @Test("concurrent memory-only and disk-only writes of a key leave the levels as one order of them would")
    func concurrentPlacementsStayOrdered() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try makeCache(scratch, serializer: StringSerializer())
        var mixed: [String] = []
        for round in 0..<300 {
            let key = "k\(round % 10)"
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await cache.setValue("memory", forKey: key, placement: .memoryOnly) }
                group.addTask { try await cache.setValue("disk", forKey: key, placement: .diskOnly) }
                group.addTask { try await cache.setValue("all", forKey: key) }
                try await group.waitForAll()
            }
            // In any order of the three writes, the last one decides both levels: memory
            // "memory" with no disk copy, memory nothing with disk "disk", or "all" on both.
            let inMemory = cache.memory.value(forKey: key)
            let onDisk = try await cache.disk.data(forKey: key).map { String(decoding: $0, as: UTF8.self) }
            switch (inMemory, onDisk) {
            case ("memory", nil), (nil, "disk"), ("all", "all"): break
            default: mixed.append("round \(round): memory \(inMemory ?? "-"), disk \(onDisk ?? "-")")
            }
        }
        #expect(mixed.isEmpty, "levels that no order of the writes leaves: \(mixed.prefix(5))")
    }

    @Test("reads racing writes of every placement, removals and evictions never bring back an older value")
    func racingReadsServeNothingOlder() async throws {
        let scratch = try TemporaryDirectory()
        var memory = MemoryCache<String, String>.Configuration(costLimit: 40)  // about four values
        memory.memoryPressureSource = nil
        let cache = HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache")),
            serializer: StringSerializer()
        )
        let placements: [CachePlacement] = [.all, .memoryOnly, .diskOnly]
        final class Flag: Sendable { let isSet = Atomic<Bool>(false) }
        let stop = Flag()
        let stale = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<2 {
                group.addTask {
                    while !stop.isSet.load(ordering: .relaxed) {
                        for key in 0..<3 { _ = try await cache.value(forKey: "k\(key)") }
                        await Task.yield()  // a memory hit never suspends: leave the writer a thread
                    }
                    return []
                }
            }
            group.addTask {
                defer { stop.isSet.store(true, ordering: .relaxed) }
                var stale: [String] = []
                for version in 0..<300 {
                    let key = "k\(version % 3)"
                    let value = String(format: "v%07d", version)
                    if version % 7 == 6 {
                        try await cache.removeValue(forKey: key)
                        if let read = try await cache.value(forKey: key) {
                            stale.append("\(key) removed, read \(read)")
                        }
                        continue
                    }
                    try await cache.setValue(value, forKey: key, placement: placements[version % placements.count])
                    if version % 5 == 0 { cache.memory.removeAll() }  // memory lets values go
                    if let read = try await cache.value(forKey: key), read != value {
                        stale.append("\(key) wrote \(value), read \(read)")
                    }
                }
                return stale
            }
            var all: [String] = []
            for try await found in group { all += found }
            return all
        }
        #expect(stale.isEmpty, "\(stale.prefix(5))")
    }
}
