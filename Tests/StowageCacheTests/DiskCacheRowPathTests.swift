import Foundation
import GRDB
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageCache

/// A row of the disk index whose file column is not a value file's name (`HH/…`): `../…`, a
/// name below another subdirectory's `..`, an absolute path. The index is a file anyone who
/// can write the cache's directory can edit (or garble), and the names in it must never reach
/// outside `data/`: such a row is damage, a miss, removed without unlinking anything.
@Suite("Disk cache rows that name files outside data/")
struct DiskCacheRowPathTests {
    @Test(
        "a row naming a file outside data/ reads as damage, and removing it unlinks nothing outside",
        arguments: ["../victim", "../../victim", "ab/../../../victim", "ab/../victim", "absolute"]
    )
    func rowNamingOutside(_ file: String) async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "parent/cache")
        let cache = try DiskCache(directory: directory)
        let value = Data(repeating: 7, count: 100_000)
        // Two values in files: one garbled and read, one garbled and removed.
        try await cache.setData(value, forKey: "read")
        try await cache.setData(value, forKey: "removed")
        try await cache.flush()
        // The same bytes at every place a name could reach: the checksum and size would match.
        let victims = [
            scratch.url.appending(path: "victim"), scratch.url.appending(path: "parent/victim"),
            directory.appending(path: "victim"), directory.appending(path: "data/victim"),
        ]
        for victim in victims { try value.write(to: victim) }
        let name = file == "absolute" ? scratch.url.appending(path: "victim").path : file
        try await DatabaseQueue(path: directory.appending(path: "index.sqlite").path).write { db in
            try db.execute(sql: "UPDATE entry SET file = ?", arguments: [name])
        }

        #expect(try await cache.data(forKey: "read") == nil, "never the bytes of a file outside data/")
        #expect(cache.statistics.damaged == 1)
        #expect(try await cache.contains(key: "read") == false, "the damaged row is gone")
        #expect(try await cache.removeData(forKey: "removed"))
        for victim in victims {
            #expect(FileManager.default.fileExists(atPath: victim.path), "\(file): \(victim.path) was unlinked")
        }
        try await cache.close()
    }
}
