import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// Hard size limits, allocated-size accounting and the volume check before a write.
@Suite("DiskCache budgets")
struct DiskCacheBudgetTests {
    private static func hardCache(
        _ directory: URL,
        limit: Int64,
        accounting: DiskCache.SizeAccounting = .logical,
        trimRatio: Double = 0.5
    ) throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "budget")
        configuration.sizeLimit = ByteCount(limit)
        configuration.sizeLimitEnforcement = .hard
        configuration.sizeAccounting = accounting
        configuration.trimRatio = trimRatio
        return try DiskCache(directory: directory, configuration: configuration)
    }

    @Test("with a hard limit no committed state is ever over it: the write evicts first, down to the trim target")
    func hardLimitHolds() throws {
        let scratch = try TemporaryDirectory()
        let cache = try Self.hardCache(scratch.url.appending(path: "cache"), limit: 100_000)
        for index in 0..<60 {
            try cache.setData(Data(repeating: UInt8(index), count: 10_000), forKey: "k\(index)")
            let size = try cache.usage().size
            #expect(size <= ByteCount(100_000), "after write \(index): \(size)")
        }
        // The newest stay, the oldest went (least recently used), and what is there reads back.
        #expect(try cache.data(forKey: "k59") == Data(repeating: 59, count: 10_000))
        #expect(try cache.data(forKey: "k0") == nil)
        #expect(cache.statistics.evictions > 0)
    }

    @Test("a value larger than the hard limit is refused with .noSpace before any byte is written; the old one stays")
    func tooLargeForTheLimit() throws {
        let scratch = try TemporaryDirectory()
        let cache = try Self.hardCache(scratch.url.appending(path: "cache"), limit: 100_000)
        try cache.setData(Data("old".utf8), forKey: "k")
        let error = try #require(throws: StowageError.self) {
            try cache.setData(Data(count: 200_000), forKey: "k")
        }
        #expect(error.code == .noSpace)
        #expect(error.message.contains("hard size limit"))
        #expect(try cache.data(forKey: "k") == Data("old".utf8))
        #expect(scratch.dataFiles().isEmpty)
        let temporary = try FileManager.default.contentsOfDirectory(
            atPath: scratch.url.appending(path: "cache/tmp").path
        )
        #expect(temporary.isEmpty)
    }

    @Test("allocated accounting counts file values by their 4 KiB blocks")
    func allocatedAccounting() throws {
        let scratch = try TemporaryDirectory()
        // Five 20,000-byte files take 5 × 20,480 bytes of blocks: one byte over this limit.
        let limit: Int64 = 5 * 20_480 - 1
        let logical = try Self.hardCache(scratch.url.appending(path: "logical"), limit: limit, trimRatio: 1)
        let allocated = try Self.hardCache(
            scratch.url.appending(path: "allocated"),
            limit: limit,
            accounting: .allocated,
            trimRatio: 1
        )
        for cache in [logical, allocated] {
            for index in 0..<5 { try cache.setData(Data(count: 20_000), forKey: "file\(index)") }
        }
        #expect(try logical.usage().count == 5)
        #expect(try allocated.usage().count == 4)
        #expect(try allocated.data(forKey: "file0") == nil)
    }

    @Test(
        "a value larger than the volume's free space is refused with .noSpace before any byte is written",
        .enabled(if: SmallVolume.canMount, "needs to mount a tmpfs (root)")
    )
    func largerThanTheVolume() throws {
        let volume = try #require(SmallVolume(bytes: 4 << 20))
        let cache = try DiskCache(directory: URL(filePath: volume.path + "/cache"))
        let before = try VolumeCapacity.forVolume(containing: URL(filePath: volume.path))
        let error = try #require(throws: StowageError.self) {
            try cache.setData(Data(count: 8 << 20), forKey: "huge")
        }
        #expect(error.code == .noSpace)
        #expect(error.message.contains("nothing was written"), "\(error)")
        let after = try VolumeCapacity.forVolume(containing: URL(filePath: volume.path))
        #expect(after.available == before.available)
        try cache.setData(Data(count: 100_000), forKey: "fits")
        #expect(try cache.data(forKey: "fits")?.count == 100_000)
    }
}
