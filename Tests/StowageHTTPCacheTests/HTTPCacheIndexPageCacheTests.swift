import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// The disk level's index keeps a small page cache: the memory level answers most reads, and
/// SQLite's default 2 MiB a connection was the writer's alone under a proxy's load (issue 45).
@Suite struct HTTPCacheIndexPageCacheTests {
    @Test("an HTTPCache's disk level bounds its index connections' page cache to 256 KiB")
    func diskLevelPageCache() async throws {
        try await withTemporaryDirectory { root in
            let cache = try HTTPCache(directory: root, configuration: .init(kind: .shared))
            #expect(cache.disk?.configuration.indexPageCacheSize == ByteCount(256 * 1_024))
            try await cache.close()
        }
    }
}
