import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache

/// `StowageTestWorker http-cache memory-only`: uses `HTTPCache.shared` and a cache opened with
/// no directory (store, hit, remove, purge, memory pressure), so that the parent, which runs it
/// with its working directory, `HOME` and `TMPDIR` in an empty directory, can check that no file
/// appeared. Prints one line per cache: `MODE FIRST SECOND`, e.g. `memoryOnly miss hit`.
enum HTTPCacheWorkerCommand {
    static func run(_ arguments: [String]) async {
        guard arguments.count == 2, arguments[1] == "memory-only" else {
            fail("usage: StowageTestWorker http-cache memory-only")
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
}
