import Foundation
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

@Suite("HTTPCache layout")
struct HTTPCacheLayoutTests {
    @Test("a new cache records its layout; a newer layout is refused with .unsupported and left as it is")
    func layoutVersion() async throws {
        try withTemporaryDirectory { root in
            let directory = root.appending(path: "http")
            _ = try HTTPCache(directory: directory)
            let marker = directory.appending(path: HTTPCache.layoutFileName)
            #expect(try String(contentsOf: marker, encoding: .utf8) == "1\n")
            _ = try HTTPCache(directory: directory)  // its own layout reopens

            try Data("2\n".utf8).write(to: marker)
            let error = #expect(throws: StowageError.self) { try HTTPCache(directory: directory) }
            #expect(error?.code == .unsupported)
            #expect(try String(contentsOf: marker, encoding: .utf8) == "2\n")
        }
    }

    @Test("under storage pressure an HTTP cache is purged in the HTTP-cache tier")
    func purgingTier() async throws {
        try await withTemporaryDirectory { root in
            let cache = try HTTPCache(directory: root.appending(path: "http"))
            #expect(cache.purgingTier == .refetchable)
            #expect(try await cache.purge() == .zero)
        }
    }
}
