import Foundation
import GRDB
import StowageCore
import StowageTesting
import Testing

@testable import StowageCache

/// `indexPageCacheSize` bounds the page cache of every connection to the index: the writer, GRDB's
/// readers and the raw lookup connections (`DiskCacheReader`).
@Suite struct DiskCacheIndexPageCacheTests {
    @Test("indexPageCacheSize sets cache_size on the writer, GRDB's readers and the raw readers")
    func everyConnectionIsBounded() throws {
        try withTemporaryDirectory { root in
            var configuration = DiskCache.Configuration()
            configuration.indexPageCacheSize = ByteCount(256 * 1_024)
            let cache = try DiskCache(directory: root, configuration: configuration)
            try cache.setData(Data("v".utf8), forKey: "k")
            #expect(try cache.data(forKey: "k") == Data("v".utf8))
            let index = cache.index
            #expect(try index.pool.write { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -256)
            #expect(try index.pool.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -256)
            #expect(try index.reader?.pageCacheSize() == -256)
            try cache.close()
        }
    }

    @Test("without indexPageCacheSize the connections keep SQLite's default")
    func defaultIsSQLites() throws {
        try withTemporaryDirectory { root in
            let cache = try DiskCache(directory: root, configuration: DiskCache.Configuration())
            try cache.setData(Data("v".utf8), forKey: "k")
            #expect(try cache.index.pool.write { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -2_000)
            #expect(try cache.index.reader?.pageCacheSize() == -2_000)
            try cache.close()
        }
    }

    @Test("a trim's batches keep to the page cache the index was given, instead of the trim's 32 MiB")
    func trimKeepsTheBound() throws {
        try withTemporaryDirectory { root in
            var configuration = DiskCache.Configuration()
            configuration.indexPageCacheSize = ByteCount(256 * 1_024)
            let cache = try DiskCache(directory: root, configuration: configuration)
            let during = try cache.index.evictionWrite { try Int.fetchOne($0, sql: "PRAGMA cache_size") }
            #expect(during == -256)
            #expect(try cache.index.pool.write { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -256)
            try cache.close()
        }
    }
}
