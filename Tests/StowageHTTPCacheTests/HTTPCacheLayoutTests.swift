import Foundation
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

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

    @Test(
        "a marker that is not a regular file marks no HTTP cache, and a FIFO or directory is refused at open",
        arguments: ["fifo", "directory", "symlink"]
    )
    func markerNotARegularFile(_ kind: String) async throws {
        try withTemporaryDirectory { root in
            let directory = root.appending(path: "http")
            _ = try HTTPCache(directory: directory)
            let marker = directory.appending(path: HTTPCache.layoutFileName)
            try FileManager.default.removeItem(at: marker)
            // Given: the marker is a FIFO (opening it to read would wait for a writer forever),
            // a directory, or a link to a file out of the cache's directory.
            switch kind {
            case "fifo": #expect(mkfifo(marker.path, 0o600) == 0)
            case "directory": try FileManager.default.createDirectory(at: marker, withIntermediateDirectories: false)
            default:
                let outside = root.appending(path: "outside")
                try Data("1\n".utf8).write(to: outside)
                try FileManager.default.createSymbolicLink(at: marker, withDestinationURL: outside)
            }
            #expect(!StoreMarker.isHTTPCache(directory), "\(kind)")
            if kind != "symlink" {
                // Opening it as an HTTP cache is refused at once (not a wait on the FIFO).
                #expect(throws: StowageError.self) { try HTTPCache(directory: directory) }
            }
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
