import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

#if canImport(Glibc)
import Glibc
#endif

/// A full volume must not keep a disk cache (and so the proxy) from opening.
@Suite("DiskCache on a full volume", .enabled(if: SmallVolume.canMount, "needs to mount a tmpfs (root)"))
struct DiskCacheFullVolumeTests {
    @Test(
        "a cache on a full volume opens, serves its values, refuses writes with .noSpace, and writes again once space returns"
    )
    func fullVolume() throws {
        let volume = try #require(SmallVolume(bytes: 4 << 20))
        let directory = URL(filePath: volume.path + "/cache", directoryHint: .isDirectory)
        let small = Data(repeating: 1, count: 1_000)
        let large = Data(repeating: 2, count: 100_000)
        do {
            let cache = try DiskCache(directory: directory)
            try cache.setData(small, forKey: "small")
            try cache.setData(large, forKey: "large")
        }
        volume.fill()

        let cache = try DiskCache(directory: directory)
        #expect(try cache.data(forKey: "small") == small)
        #expect(try cache.data(forKey: "large") == large)
        let error = try #require(throws: StowageError.self) {
            try cache.setData(Data(repeating: 3, count: 100_000), forKey: "new")
        }
        #expect(error.code == .noSpace, "\(error)")
        #expect(try cache.data(forKey: "large") == large, "a failed write leaves what was there")

        volume.free()
        try cache.setData(Data(repeating: 3, count: 100_000), forKey: "new")
        #expect(try cache.data(forKey: "new") == Data(repeating: 3, count: 100_000))
        try cache.setData(small, forKey: "small2")
        #expect(try cache.data(forKey: "small2") == small)
    }
}
