import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// Apple's storage guide's two write patterns on a real small volume: opportunistic writes are
/// skipped when the volume is short of space (Pattern 1), and a free-space floor makes a cache
/// remove its own oldest entries before an important write (Pattern 2).
@Suite("DiskCache when space runs short", .enabled(if: SmallVolume.canMount, "needs to mount a tmpfs (root)"))
struct DiskCacheRoomTests {
    /// 64 MiB: its opportunistic reserve is 10% (6.4 MiB), its important one 1% (0.64 MiB).
    private static let volumeBytes = 64 << 20

    @Test(
        "an opportunistic write is skipped with a typed outcome below the opportunistic reserve; important ones still go in"
    )
    func opportunisticIsSkipped() async throws {
        let volume = try #require(SmallVolume(bytes: Self.volumeBytes))
        let cache = try DiskCache(directory: URL(filePath: volume.path + "/cache", directoryHint: .isDirectory))
        let thumbnail = Data(repeating: 7, count: 40_000)
        try Self.skipsWhileShort(volume: volume, cache: cache, thumbnail: thumbnail)

        volume.free()
        // Seen twice under load: right after the unlink the volume still showed the filler's
        // space taken (available 3.08 MB of 67.1 MB, as before it), so the cache rightly skipped
        // the write; the cause was not established (children are spawned with closefrom, so
        // none inherits the filler). The cache is asked once the volume says the space is back;
        // if it never comes back, this wait fails and says so.
        let volumeURL = URL(filePath: volume.path)
        try await eventually {
            try VolumeCapacity.forVolume(containing: volumeURL).availableForOpportunisticUsage
                > ByteCount(Int64(thumbnail.count))
        }
        let afterFree = try Self.storeOpportunistically(thumbnail, forKey: "thumb-2", in: cache)
        let figures = try await VolumeCapacity.forVolume(containing: volumeURL)
        #expect(afterFree == .stored, "\(afterFree); \(figures)")
    }

    /// Pattern 1 while the volume is inside its opportunistic reserve: nice-to-have writes are
    /// skipped with a typed outcome, important ones go in.
    private static func skipsWhileShort(volume: SmallVolume, cache: DiskCache, thumbnail: Data) throws {
        #expect(try cache.setData(thumbnail, forKey: "thumb-1", priority: .opportunistic) == .stored)

        volume.fill(leaving: 3 << 20)  // 3 MiB free: inside the 6.4 MiB opportunistic reserve.
        let outcome = try cache.setData(thumbnail, forKey: "thumb-2", priority: .opportunistic)
        guard case .skippedForLowSpace(let available) = outcome else {
            Issue.record("stored although the volume is inside its opportunistic reserve: \(outcome)")
            return
        }
        #expect(available < ByteCount(Int64(thumbnail.count)) || available == .zero)
        #expect(try cache.data(forKey: "thumb-2") == nil)
        // A small inline value is nice-to-have too: skipped all the same.
        #expect(try cache.setData(Data([1]), forKey: "tiny", priority: .opportunistic) != .stored)
        #expect(try cache.setData(thumbnail, forKey: "thumb-1", priority: .opportunistic) != .stored)
        #expect(try cache.data(forKey: "thumb-1") == thumbnail, "a skipped write leaves the previous value")

        #expect(try cache.setData(thumbnail, forKey: "profile") == .stored, "important data still fits")
        #expect(try cache.data(forKey: "profile") == thumbnail)
    }

    /// The synchronous opportunistic write, from the async test.
    private static func storeOpportunistically(
        _ data: Data,
        forKey key: String,
        in cache: DiskCache
    ) throws -> DiskCache.WriteOutcome {
        try cache.setData(data, forKey: key, priority: .opportunistic)
    }

    @Test("with a free-space floor, an important write first removes the cache's least recently used entries")
    func floorMakesRoom() throws {
        let volume = try #require(SmallVolume(bytes: Self.volumeBytes))
        var configuration = DiskCache.Configuration(name: "room")
        configuration.sizeLimit = nil
        configuration.accessTimeResolution = .zero
        configuration.freeSpaceFloor = ByteCount(8 << 20)
        let cache = try DiskCache(
            directory: URL(filePath: volume.path + "/cache", directoryHint: .isDirectory),
            configuration: configuration
        )
        let chunk = Data(repeating: 3, count: 1 << 20)
        for index in 0..<10 { try cache.setData(chunk, forKey: "old-\(index)") }
        _ = try cache.data(forKey: "old-0")  // Read: now the most recently used.

        volume.fill(leaving: 12 << 20)  // 12 MiB free: a 1 MiB write stays above the 8 MiB floor.
        try cache.setData(chunk, forKey: "fits")
        #expect(try cache.usage().count == 11, "nothing removed while above the floor")

        volume.free()
        volume.fill(leaving: 6 << 20)  // 6 MiB free (about 5.4 for important data): under the floor.
        try cache.setData(chunk, forKey: "new")
        #expect(try cache.data(forKey: "new") == chunk)
        #expect(try cache.data(forKey: "old-1") == nil, "least recently used went first")
        #expect(try cache.data(forKey: "old-0") == chunk, "the recently read entry stays")
        var status = statvfs()
        #expect(statvfs(volume.path, &status) == 0)
        let free = Int64(status.f_bavail) * Int64(status.f_frsize)
        #expect(free >= (8 << 20) - (1 << 20), "room was made up to the floor: \(free) bytes free")

        var negative = DiskCache.Configuration()
        negative.freeSpaceFloor = ByteCount(-1)
        #expect(throws: StowageError.self) {
            _ = try DiskCache(directory: URL(filePath: volume.path + "/other"), configuration: negative)
        }
    }

    @Test("a floor as large as ByteCount can hold, before a value larger than the free space, is a typed error")
    func hugeFloor() throws {
        let volume = try #require(SmallVolume(bytes: 16 << 20))
        var configuration = DiskCache.Configuration(name: "huge-floor")
        configuration.freeSpaceFloor = ByteCount(Int64.max)
        let cache = try DiskCache(
            directory: URL(filePath: volume.path + "/cache", directoryHint: .isDirectory),
            configuration: configuration
        )
        let small = Data(repeating: 1, count: 64 << 10)
        #expect(try cache.setData(small, forKey: "small") == .stored)
        volume.fill(leaving: 1 << 20)
        // floor − (available − count) overflowed Int64 once the value was larger than the space
        // left for important data, and the write trapped instead of failing.
        #expect(throws: StowageError.self) {
            try cache.setData(Data(repeating: 2, count: 2 << 20), forKey: "big")
        }
        #expect(try cache.data(forKey: "big") == nil)
    }

    @Test("a value the hard size limit refuses trims nothing for the free-space floor on its way to the error")
    func refusedValueTrimsNothing() throws {
        let volume = try #require(SmallVolume(bytes: Self.volumeBytes))
        var configuration = DiskCache.Configuration(name: "refused")
        configuration.sizeLimit = ByteCount(4 << 20)
        configuration.sizeLimitEnforcement = .hard
        configuration.accessTimeResolution = .zero
        configuration.freeSpaceFloor = ByteCount(8 << 20)
        let cache = try DiskCache(
            directory: URL(filePath: volume.path + "/cache", directoryHint: .isDirectory),
            configuration: configuration
        )
        let chunk = Data(repeating: 3, count: 1 << 20)
        for index in 0..<3 { try cache.setData(chunk, forKey: "kept-\(index)") }
        volume.fill(leaving: 6 << 20)  // Under the floor for a 5 MiB write.
        #expect(throws: StowageError.self) {
            try cache.setData(Data(repeating: 4, count: 5 << 20), forKey: "too-big")
        }
        // The floor emptied the cache first, then the hard limit refused the value all the same.
        #expect(try cache.usage().count == 3, "entries lost to a write that was refused")
    }

    @Test("a hybrid cache keeps a skipped opportunistic value in memory and drops the disk's older copy")
    func hybridSkipsDiskOnly() async throws {
        let volume = try #require(SmallVolume(bytes: Self.volumeBytes))
        let cache = HybridCache(
            memory: try MemoryCache<String, Data>(),
            disk: try DiskCache(directory: URL(filePath: volume.path + "/hybrid", directoryHint: .isDirectory)),
            serializer: DataSerializer()
        )
        try await cache.setValue(Data(repeating: 1, count: 40_000), forKey: "thumb")
        volume.fill(leaving: 3 << 20)
        let outcome = try await cache.setValue(
            Data(repeating: 2, count: 40_000),
            forKey: "thumb",
            priority: .opportunistic
        )
        #expect(outcome != .stored)
        #expect(try await cache.value(forKey: "thumb") == Data(repeating: 2, count: 40_000), "memory has the new value")
        #expect(try await cache.disk.data(forKey: "thumb") == nil, "the older disk copy cannot come back")
    }
}
