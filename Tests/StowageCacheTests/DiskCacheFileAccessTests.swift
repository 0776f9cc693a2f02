import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `withFile(forKey:)`: a stored value handed to a decoder, `mmap` or `sendfile` as an open file,
/// pinned while the closure runs (SDWebImage's `defaultCachePathForKey:`, without the race).
@Suite("DiskCache file access")
struct DiskCacheFileAccessTests {
    private let large = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// All bytes of `file`, read at explicit offsets through its descriptor.
    private func contents(of file: DiskCache.ValueFile) throws -> Data {
        var data = Data(count: Int(file.size))
        let count = data.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, 0) }
        try #require(count == Int(file.size))
        return data
    }

    /// The value file `key` is stored in, from the index.
    private func storedFile(_ directory: URL, key: String) throws -> String {
        let name = try #require(
            try DatabaseQueue(path: directory.appending(path: "index.sqlite").path).read { db in
                try String.fetchOne(db, sql: "SELECT file FROM entry WHERE key = ?", arguments: [key])
            }
        )
        return directory.path(percentEncoded: false) + "/data/" + name
    }

    @Test("a file value is handed over open, not copied: its descriptor and its path read the value")
    func fileValueHandedOver() throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"))
        try cache.setData(large, forKey: "image")
        let seen = try cache.withFile(forKey: "image") { file in
            #expect(!file.isCopy)
            #expect(file.size == Int64(large.count))
            #expect(try contents(of: file) == large)
            return try Data(contentsOf: file.url)
        }
        #expect(seen == large)
        #expect(cache.statistics.hits == 1)
    }

    @Test("a replacement and a removal while the closure runs leave it reading the value it was given")
    func pinnedAgainstReplaceAndRemove() throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"))
        try cache.setData(large, forKey: "k")
        let newer = Data(repeating: 1, count: 50_000)
        try cache.withFile(forKey: "k") { file in
            try cache.setData(newer, forKey: "k")
            #expect(try contents(of: file) == large)
            #expect(try Data(contentsOf: file.url) == large, "the path opens the pinned file, not the new one")
            #expect(try cache.data(forKey: "k") == newer, "other readers see the replacement at once")
            #expect(try cache.removeData(forKey: "k"))
            try cache.removeAll()
            #expect(try contents(of: file) == large)
        }
        #expect(try cache.data(forKey: "k") == nil)
        #expect(scratch.dataFiles().isEmpty, "nothing pinned is left behind once the closure returns")
    }

    @Test("a trim over the size limit while the closure runs does not cut the reader short")
    func pinnedAgainstTrim() throws {
        let scratch = try TemporaryDirectory()
        var configuration = DiskCache.Configuration(name: "trim")
        configuration.sizeLimit = 250_000
        configuration.sizeLimitEnforcement = .hard
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        try cache.setData(large, forKey: "oldest")
        try cache.withFile(forKey: "oldest") { file in
            for index in 0..<5 { try cache.setData(large, forKey: "new-\(index)") }
            #expect(try cache.data(forKey: "oldest") == nil, "the trim removed the pinned key")
            #expect(try contents(of: file) == large)
        }
    }

    @Test("an inline value is handed as an unnamed copy: same bytes, nothing left in the cache's files")
    func inlineValueCopied() async throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"))
        try await cache.setData(Data("small".utf8), forKey: "s")
        let read = try await cache.withFile(forKey: "s") { file in
            await Task.yield()  // the asynchronous overload
            #expect(file.isCopy)
            #expect(lseek(file.descriptor, 0, SEEK_CUR) == 0, "handed over rewound")
            return try contents(of: file)
        }
        #expect(read == Data("small".utf8))
        let temporary = scratch.url.appending(path: "cache/tmp").path(percentEncoded: false)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] == [])
    }

    @Test("a missing or expired key is nil and the closure never runs")
    func missDoesNotRun() async throws {
        let scratch = try TemporaryDirectory()
        let clock = ManualClock()
        var configuration = DiskCache.Configuration(name: "miss")
        configuration.clock = clock.cacheClock
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: configuration)
        try await cache.setData(large, forKey: "short", timeToLive: .seconds(10))
        clock.advance(by: .seconds(11))
        let missing: Int? = try cache.withFile(forKey: "absent") { _ in
            Issue.record("ran on a miss")
            return 1
        }
        let expired: Int? = try await cache.withFile(forKey: "short") { _ in
            await Task.yield()
            Issue.record("ran when expired")
            return 1
        }
        #expect(missing == nil && expired == nil)
    }

    @Test("a garbled value file is a miss and removed; verifyingChecksum: false hands the bytes as they are")
    func garbledFile() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        for key in ["checked", "unchecked"] {
            try cache.setData(large, forKey: key)
            let descriptor = open(try storedFile(directory, key: key), O_WRONLY)
            #expect(pwrite(descriptor, [0xFF, 0xFF], 2, 5_000) == 2)
            close(descriptor)
        }
        #expect(try cache.withFile(forKey: "checked") { _ in true } == nil)
        #expect(cache.statistics.damaged == 1)
        #expect(try cache.data(forKey: "checked") == nil)
        let bytes = try cache.withFile(forKey: "unchecked", verifyingChecksum: false) { try contents(of: $0) }
        #expect(bytes?.count == large.count && bytes != large)
    }

    @Test("a FIFO or a symbolic link in a value's place is a prompt miss, never followed or waited on")
    func hostileReplacement() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let cache = try DiskCache(directory: directory)
        let outside = scratch.url.appending(path: "outside")
        try large.write(to: outside)
        for key in ["fifo", "link"] { try cache.setData(large, forKey: key) }
        let fifo = try storedFile(directory, key: "fifo")
        unlink(fifo)
        #expect(mkfifo(fifo, 0o600) == 0)
        let link = try storedFile(directory, key: "link")
        unlink(link)
        #expect(symlink(outside.path(percentEncoded: false), link) == 0)
        // A hang here would stop the run: the regression shows as a timeout.
        #expect(try cache.withFile(forKey: "fifo") { _ in true } == nil)
        #expect(try cache.withFile(forKey: "link") { _ in true } == nil)
        #expect(try Data(contentsOf: outside) == large, "the outside file is untouched")
    }

    @Test("the descriptor is closed when the closure returns or throws")
    func descriptorClosed() throws {
        struct Stop: Error {}
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"))
        try cache.setData(large, forKey: "k")
        // The same file, opened once more: its inode identifies descriptors that still hold it.
        var kept = stat()
        let descriptor = try #require(
            try cache.withFile(forKey: "k") { file in
                #expect(fstat(file.descriptor, &kept) == 0)
                return file.descriptor
            }
        )
        var after = stat()
        #expect(fstat(descriptor, &after) != 0 || after.st_ino != kept.st_ino, "still open after the closure")
        #expect(throws: Stop.self) { try cache.withFile(forKey: "k") { _ in throw Stop() } }
    }
}
