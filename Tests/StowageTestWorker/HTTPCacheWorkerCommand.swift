import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport

/// `StowageTestWorker http-cache heap CAPACITY URLS`: fills a memory-only cache of CAPACITY
/// bytes with URLS distinct 1 KiB responses, each asked for twice (a miss, then a hit, which
/// keeps a prepared answer), alone in its process, and prints `GROWN CHARGED`: the bytes
/// `malloc` holds beyond what it held before the cache was opened (``HeapInUse``), and what the
/// memory level charged at the end.
///
/// `StowageTestWorker http-cache invalidate DIR URL`: invalidates URL through an `HTTPCache` of
/// its own on DIR and prints `invalidated` (or `not stored`).
///
/// `StowageTestWorker http-cache memory-only`: uses `HTTPCache.shared` and a cache opened with
/// no directory (store, hit, remove, purge, memory pressure), so that the parent, which runs it
/// with its working directory, `HOME` and `TMPDIR` in an empty directory, can check that no file
/// appeared. Prints one line per cache: `MODE FIRST SECOND`, e.g. `memoryOnly miss hit`.
enum HTTPCacheWorkerCommand {
    static func run(_ arguments: [String]) async {
        if arguments.count == 4, arguments[1] == "heap", let capacity = Int(arguments[2]), let urls = Int(arguments[3])
        {
            do {
                try await heap(capacity: capacity, urls: urls)
            } catch {
                fail("\(error)")
            }
            return
        }
        if arguments.count == 4, arguments[1] == "invalidate" {
            do {
                // Another process on the same directory (an app's extension, a command-line tool).
                let cache = try HTTPCache(directory: URL(filePath: arguments[2], directoryHint: .isDirectory))
                say(try await cache.invalidate(url: arguments[3]) ? "invalidated" : "not stored")
            } catch {
                fail("\(error)")
            }
            return
        }
        guard arguments.count == 2, arguments[1] == "memory-only" else {
            fail("usage: StowageTestWorker http-cache memory-only | heap CAPACITY URLS | invalidate DIR URL")
        }
        do {
            try await exercise(HTTPCache.shared)
            try await exercise(try HTTPCache(directory: nil))
        } catch {
            fail("\(error)")
        }
    }

    private static func exercise(_ cache: HTTPCache) async throws {
        let fetch: HTTPFetch = { _, _ in
            var response = HTTPResponse(status: .ok)
            response.headerFields[.cacheControl] = "max-age=600"
            response.headerFields[.date] = HTTPDate.format(Int64(Date().timeIntervalSince1970))
            return (response, HTTPBody(bytes: Array(repeating: 7, count: 100_000)))
        }
        let request = HTTPRequest(method: .get, scheme: "https", authority: "origin.test", path: "/feed")
        let first = try await cache.respond(to: request, fetch: fetch)
        _ = try await first.body.collect(upTo: 1 << 20)
        let second = try await cache.respond(to: request, fetch: fetch)
        _ = try await second.body.collect(upTo: 1 << 20)
        let large = HTTPRequest(method: .get, scheme: "https", authority: "origin.test", path: "/large")
        _ = try await cache.respond(to: large, fetch: fetch).body.collect(upTo: 1 << 20)
        _ = try await cache.invalidate(urlPrefix: "https://origin.test/l")
        MemoryPressureSource.shared.notify(.critical)
        try await cache.removeResponses(for: request)
        _ = try await cache.purge(PurgeRequest())
        try await cache.removeAll()
        say("\(cache.mode) \(first.outcome) \(second.outcome)")
    }

    private static func heap(capacity: Int, urls: Int) async throws {
        guard let before = HeapInUse.bytes() else { fail("malloc_info is not available here") }
        var configuration = HTTPCache.Configuration()
        configuration.memoryCapacity = ByteCount(Int64(capacity))
        let cache = try HTTPCache(directory: nil, configuration: configuration)
        let body = Array(repeating: UInt8(ascii: "x"), count: 1_024)
        // Fields as nginx sends them for a static file, so a record holds what a real one does.
        let fetch: HTTPFetch = { _, _ in
            var response = HTTPResponse(status: .ok)
            response.headerFields[.server] = "nginx/1.22.1"
            response.headerFields[.date] = "Sun, 29 Nov 2026 08:00:00 GMT"
            response.headerFields[.contentType] = "application/octet-stream"
            response.headerFields[.contentLength] = "1024"
            response.headerFields[.lastModified] = "Sun, 29 Nov 2026 07:59:00 GMT"
            response.headerFields[.eTag] = "\"692aa9f2-400\""
            response.headerFields[.cacheControl] = "max-age=3600"
            response.headerFields[.acceptRanges] = "bytes"
            return (response, HTTPBody(bytes: body))
        }
        for n in 0..<urls {
            let request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:18111", path: "/u/0/\(n)")
            for _ in 0..<2 {
                _ = try await cache.respond(to: request, fetch: fetch).body.collect(upTo: 4_096)
            }
        }
        guard let after = HeapInUse.bytes() else { fail("malloc_info is not available here") }
        say("\(after - before) \(cache.memoryUsage.rawValue)")
        withExtendedLifetime(cache) {}
    }
}
