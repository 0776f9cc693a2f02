import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// Rebuilding a damaged index empties the `data/` directory the cache opened, through its
/// descriptor: a link put in the cache directory's place, or in `data`'s, between the open and
/// the rebuild cannot lead the removal to files elsewhere.
@Suite("DiskCache index rebuild: confined to the opened data directory")
struct DiskCacheRebuildConfinementTests {
    /// A cache in `scratch/cache` with values in `data/` and an index whose schema is damaged.
    private func damagedCache(_ scratch: TemporaryDirectory) throws {
        do {
            let cache = try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: .init(name: "c"))
            // Large enough to live in files of their own, not in the index.
            for number in 0..<10 {
                try cache.setData(Data(repeating: UInt8(number), count: 40_000), forKey: "k\(number)")
            }
            try cache.close()
        }
        try DatabaseQueue(path: scratch.path + "/cache/index.sqlite").writeWithoutTransaction { db in
            try db.execute(sql: "DROP TABLE entry")
        }
        #expect(!scratch.dataFiles().isEmpty)
    }

    /// `victim/data/00/precious`, a file outside the cache that a rebuild must never remove.
    private func victim(_ scratch: TemporaryDirectory) throws -> String {
        try scratch.write("victim/data/00/precious", bytes: 8)
        return scratch.path + "/victim/data/00/precious"
    }

    private func rebuild(_ scratch: TemporaryDirectory, files: DiskCacheFiles) throws {
        _ = try DiskCache.openIndex(
            path: scratch.path + "/cache/index.sqlite",
            files: files,
            configuration: .init(name: "c"),
            isOnlyUser: true
        )
    }

    @Test("the cache directory swapped for a link to another cache-shaped directory: its files survive")
    func cacheDirectorySwappedForLink() throws {
        let scratch = try TemporaryDirectory()
        try damagedCache(scratch)
        let precious = try victim(scratch)
        let files = try DiskCacheFiles(root: scratch.path + "/cache", synchronous: false)
        // Between the open and the rebuild: the directory moves away and a link takes its place,
        // pointing at a directory whose index is damaged too (so the rebuild runs there).
        try FileManager.default.moveItem(atPath: scratch.path + "/cache", toPath: scratch.path + "/moved")
        try FileManager.default.copyItem(
            atPath: scratch.path + "/moved/index.sqlite",
            toPath: scratch.path + "/victim/index.sqlite"
        )
        try scratch.symlink("cache", to: scratch.path + "/victim")

        try rebuild(scratch, files: files)

        #expect(FileManager.default.fileExists(atPath: precious), "a file outside the opened data/ was removed")
        #expect(scratch.dataFiles(cache: "moved").isEmpty, "the opened data/ was emptied")
    }

    @Test("data/ swapped for a link: the rebuild empties the directory it opened, the link's target keeps its files")
    func dataSwappedForLink() throws {
        let scratch = try TemporaryDirectory()
        try damagedCache(scratch)
        let precious = try victim(scratch)
        let files = try DiskCacheFiles(root: scratch.path + "/cache", synchronous: false)
        try FileManager.default.moveItem(atPath: scratch.path + "/cache/data", toPath: scratch.path + "/moved-data")
        try scratch.symlink("cache/data", to: scratch.path + "/victim/data")

        try rebuild(scratch, files: files)

        #expect(FileManager.default.fileExists(atPath: precious), "a file outside the opened data/ was removed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/moved-data").isEmpty)
        #expect(scratch.exists("cache/index.sqlite.damaged"), "the damaged index is kept aside")
    }
}
