import Foundation
import StowageTestSupport
import Testing

@testable import StowageCache

/// The group commit retries a failed batch write by write (`DiskCacheCommitQueue`); a write
/// whose first commit took effect after all is then committed a second time. What that second
/// commit replaced is the write's own row, and the file the caller removes after a commit must
/// never be the one the row now names.
@Suite("Disk cache writes committed twice")
struct DiskCacheCommitRetryTests {
    @Test("a write committed again names no replaced file, and its value stays readable")
    func secondCommitKeepsItsFile() throws {
        let scratch = try TemporaryDirectory()
        let cache = try DiskCache(directory: scratch.url.appending(path: "cache"))
        let value = Data(repeating: 9, count: 40_000)  // a file, not inline
        try cache.setData(value, forKey: "k")
        let entry = try #require(try cache.index.entry(forKey: "k"))
        #expect(entry.file != nil)
        // The same write committed a second time, as a retry does.
        let outcomes = try cache.commits.commit([.init(key: "k", entry: entry)])
        #expect(outcomes[0].replacedFile == nil, "the row's own file is named replaced")
        // What DiskCache does with a commit's outcome: remove the file it replaced.
        cache.files.remove(outcomes.compactMap(\.replacedFile))
        #expect(try cache.data(forKey: "k") == value)
        try cache.close()
    }
}
